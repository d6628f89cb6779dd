"""The ingest batcher: files submitted for ingest are tracked, then grouped into ingest or bulk import jobs.

- :mod:`sleeper.ingest.batcher.model`: ``TrackedFile`` and ``SubmitRequest``.
- :mod:`sleeper.ingest.batcher.ports`: the ``IngestBatcherStore`` port and the instance the batcher runs in.
- :mod:`sleeper.ingest.batcher.submitter`: reads submit requests and tracks their files.
- :mod:`sleeper.ingest.batcher.job_creator`: batches pending files into jobs and sends them to the chosen queue.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sleeper.core import lazy_face

if TYPE_CHECKING:
    from sleeper.ingest.batcher.entry import create_batcher_jobs as create_batcher_jobs
    from sleeper.ingest.batcher.exceptions import BatcherError as BatcherError
    from sleeper.ingest.batcher.exceptions import BatcherFileNotFoundError as BatcherFileNotFoundError
    from sleeper.ingest.batcher.exceptions import BatcherStoreError as BatcherStoreError
    from sleeper.ingest.batcher.exceptions import BatcherTableNotFoundError as BatcherTableNotFoundError
    from sleeper.ingest.batcher.exceptions import InvalidSubmitRequestError as InvalidSubmitRequestError
    from sleeper.ingest.batcher.exceptions import SubmitRequestError as SubmitRequestError
    from sleeper.ingest.batcher.job_creator import INGEST_QUEUE_NAMES as INGEST_QUEUE_NAMES
    from sleeper.ingest.batcher.job_creator import route_bulk_import_to as route_bulk_import_to
    from sleeper.ingest.batcher.model import NOT_ASSIGNED_TO_JOB as NOT_ASSIGNED_TO_JOB
    from sleeper.ingest.batcher.model import SkippedFile as SkippedFile
    from sleeper.ingest.batcher.model import SubmitRequest as SubmitRequest
    from sleeper.ingest.batcher.model import TrackedFile as TrackedFile
    from sleeper.ingest.batcher.model import from_epoch_millis as from_epoch_millis
    from sleeper.ingest.batcher.model import newest_first as newest_first
    from sleeper.ingest.batcher.model import oldest_first as oldest_first
    from sleeper.ingest.batcher.ports import ASSIGN_JOB_BATCH_SIZE as ASSIGN_JOB_BATCH_SIZE
    from sleeper.ingest.batcher.ports import IngestBatcherStore as IngestBatcherStore
    from sleeper.ingest.batcher.report import batcher_report as batcher_report
    from sleeper.ingest.batcher.report import report_rows as report_rows
    from sleeper.ingest.batcher.submitter import IngestBatcherSubmitter as IngestBatcherSubmitter
    from sleeper.ingest.batcher.submitter import parse_submit_request as parse_submit_request
    from sleeper.ingest.batcher.submitter import submit_files as submit_files


__getattr__, __dir__ = lazy_face(__name__, __file__)
