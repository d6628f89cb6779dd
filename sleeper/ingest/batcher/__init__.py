"""The ingest batcher: files submitted for ingest are tracked, then grouped into ingest or bulk import jobs.

- :mod:`sleeper.ingest.batcher.model`: ``TrackedFile`` and ``SubmitRequest``.
- :mod:`sleeper.ingest.batcher.ports`: the ``IngestBatcherStore`` port and the instance the batcher runs in.
- :mod:`sleeper.ingest.batcher.submitter`: reads submit requests and tracks their files.
- :mod:`sleeper.ingest.batcher.job_creator`: batches pending files into jobs and sends them to the chosen queue.
"""

from __future__ import annotations
