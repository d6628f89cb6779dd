"""Job, task and query trackers: the updates workers report, the statuses derived from them, and the ports.

A job tracker stores every update it is given; a job's status is derived when it is read. Updates that share a job
run id belong to one run of the job (a job may run more than once: a message delivered twice, a retry after a
failure). Each run gets a status from its furthest update, where a failure outranks everything else in that run. The
job's status is the furthest status of any of its runs, so a run that is in progress or succeeded outranks runs
that failed (as in Sleeper: a duplicate delivery that fails after another run committed does not make a finished
job look failed).

The query tracker keeps one row per query (sub-query id ``"-"``) and one per sub-query. When a sub-query finishes,
the parent's state is recomputed from all of its sub-queries (``parent_state_if_finished``).

All times are timezone-aware ``datetime`` values. Updates carry their own time; the tracker adds an expiry date
(time to live: one week for job and task updates, one day for queries).

Modules: ``base`` (the error, the checks and the base of job updates, with the grouping of updates into runs shared
by ingest and compaction), ``ingest`` and ``compaction`` (job updates, statuses and tracker ports), ``task`` (task
updates, statuses, port), ``query`` (query rows, the roll-up of sub-queries, port), ``serde`` (the JSON of updates
kept by durable adapters), ``jobs`` (the one job tracker, generic over the kind of job, on the update-store port each
backend implements once) and ``runs`` (the skeleton of one tracked job run, shared by every job runner).
"""

from typing import TYPE_CHECKING

from sleeper.core import lazy_face

if TYPE_CHECKING:
    from sleeper.core.trackers.base import JOB_UPDATE_TTL as JOB_UPDATE_TTL
    from sleeper.core.trackers.base import TrackerError as TrackerError
    from sleeper.core.trackers.compaction import CompactionJobCommitted as CompactionJobCommitted
    from sleeper.core.trackers.compaction import CompactionJobCreated as CompactionJobCreated
    from sleeper.core.trackers.compaction import CompactionJobFailed as CompactionJobFailed
    from sleeper.core.trackers.compaction import CompactionJobFinished as CompactionJobFinished
    from sleeper.core.trackers.compaction import CompactionJobRun as CompactionJobRun
    from sleeper.core.trackers.compaction import CompactionJobStarted as CompactionJobStarted
    from sleeper.core.trackers.compaction import CompactionJobStatus as CompactionJobStatus
    from sleeper.core.trackers.compaction import CompactionJobStatusType as CompactionJobStatusType
    from sleeper.core.trackers.compaction import CompactionJobTracker as CompactionJobTracker
    from sleeper.core.trackers.compaction import CompactionJobUpdate as CompactionJobUpdate
    from sleeper.core.trackers.ingest import IngestJobAddedFiles as IngestJobAddedFiles
    from sleeper.core.trackers.ingest import IngestJobFailed as IngestJobFailed
    from sleeper.core.trackers.ingest import IngestJobFinished as IngestJobFinished
    from sleeper.core.trackers.ingest import IngestJobRun as IngestJobRun
    from sleeper.core.trackers.ingest import IngestJobStarted as IngestJobStarted
    from sleeper.core.trackers.ingest import IngestJobStatus as IngestJobStatus
    from sleeper.core.trackers.ingest import IngestJobStatusType as IngestJobStatusType
    from sleeper.core.trackers.ingest import IngestJobTracker as IngestJobTracker
    from sleeper.core.trackers.ingest import IngestJobUpdate as IngestJobUpdate
    from sleeper.core.trackers.ingest import IngestJobValidated as IngestJobValidated
    from sleeper.core.trackers.ingest import ValidationResult as ValidationResult
    from sleeper.core.trackers.jobs import COMPACTION_JOBS as COMPACTION_JOBS
    from sleeper.core.trackers.jobs import INGEST_JOBS as INGEST_JOBS
    from sleeper.core.trackers.jobs import JobKind as JobKind
    from sleeper.core.trackers.jobs import JobStatus as JobStatus
    from sleeper.core.trackers.jobs import JobTracker as JobTracker
    from sleeper.core.trackers.query import PARENT_SUB_QUERY_ID as PARENT_SUB_QUERY_ID
    from sleeper.core.trackers.query import QUERY_TTL as QUERY_TTL
    from sleeper.core.trackers.query import RUN_SEPARATOR as RUN_SEPARATOR
    from sleeper.core.trackers.query import QueryState as QueryState
    from sleeper.core.trackers.query import QueryTracker as QueryTracker
    from sleeper.core.trackers.query import QueryUpdate as QueryUpdate
    from sleeper.core.trackers.query import TrackedQuery as TrackedQuery
    from sleeper.core.trackers.query import apply_query_update as apply_query_update
    from sleeper.core.trackers.query import roll_up_parent as roll_up_parent
    from sleeper.core.trackers.query import run_of as run_of
    from sleeper.core.trackers.runs import CompactionRun as CompactionRun
    from sleeper.core.trackers.runs import IngestRun as IngestRun
    from sleeper.core.trackers.runs import JobOutcome as JobOutcome
    from sleeper.core.trackers.runs import RunFailure as RunFailure
    from sleeper.core.trackers.serde import JobUpdate as JobUpdate
    from sleeper.core.trackers.serde import task_update_from_json as task_update_from_json
    from sleeper.core.trackers.serde import update_to_json as update_to_json
    from sleeper.core.trackers.serde import update_type_name as update_type_name
    from sleeper.core.trackers.task import TaskFinished as TaskFinished
    from sleeper.core.trackers.task import TaskStarted as TaskStarted
    from sleeper.core.trackers.task import TaskStatus as TaskStatus
    from sleeper.core.trackers.task import TaskTracker as TaskTracker
    from sleeper.core.trackers.task import TaskUpdate as TaskUpdate
    from sleeper.core.trackers.task import task_statuses as task_statuses


__getattr__, __dir__ = lazy_face(__name__, __file__)
