"""Job and task trackers in DynamoDB, in the tables Sleeper's trackers use .

A job tracker (ingest or compaction) has two tables:

- ``sleeper-<id>-<kind>-job-updates``: one item per update, hash ``TableId`` (``"-"`` when the update names no
  table), range ``JobIdAndUpdate`` = ``<jobId>|<epoch ms>|<8 random hex digits>``, with ``JobId``, ``UpdateType``,
  ``UpdateTime`` (epoch ms, when it was recorded), ``ExpiryDate`` (epoch s, the DynamoDB time to live), ``JobRunId``,
  ``TaskId`` and the attributes Sleeper writes for that type (``ValidationResult``, ``ValidationReasons``,
  ``JsonMessage``, ``InputFilesCount``, ``StartTime``, ``FinishTime``, ``RecordsRead``, ``RecordsWritten``,
  ``FilesWrittenCount``, ``FailureReasons``, ...).
- ``sleeper-<id>-<kind>-job-lookup``: one item per job, hash ``JobId``, with ``TableId`` (of its latest update),
  ``FirstUpdateTime``, ``LastUpdateTime``, ``LastUpdateType``, ``ExpiryDate`` and, for ingest jobs,
  ``LastValidationResult`` (indexed by ``by-validation`` to find rejected jobs). ``TableIds`` (a string set of every
  table its updates were stored under) is this port's addition.

A task tracker has one table, ``sleeper-<id>-<kind>-task-status``: hash ``TaskId``, range ``UpdateTime`` (epoch
ms; moved on by a millisecond if two updates of a task are recorded in the same one).

Every item also holds the update itself as JSON in ``UpdateBody`` (``sleeper.core.trackers.serde.update_to_json``);
statuses are derived from those bodies by the same functions the other adapters use. Items without a body (written
by Java Sleeper) are skipped. Reads of the tables are strongly consistent; finding rejected ingest jobs reads the
``by-validation`` index, which is eventually consistent. DynamoDB removes expired items by itself.
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import Callable, Iterable, Sequence
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, ClassVar, Generic, Self, TypeVar

from botocore.exceptions import BotoCoreError, ClientError

from sleeper.adapters.aws.dynamodb_paging import query_items, query_key, scan_items
from sleeper.adapters.aws.dynamodb_transaction_log import to_epoch_ms
from sleeper.adapters.aws.exceptions import AwsError, error_code, translate, translated
from sleeper.adapters.aws.resources import (
    JOB_ID_AND_UPDATE,
    LAST_VALIDATION_RESULT,
    TRACKER_EXPIRY_DATE,
    TRACKER_JOB_ID,
    TRACKER_TABLE_ID,
    TRACKER_TASK_ID,
    TRACKER_UPDATE_TIME,
    TRACKER_UPDATE_TYPE,
    VALIDATION_INDEX,
)
from sleeper.core import JobTrackerTableNames, task_tracker_table_name
from sleeper.core.trackers import (
    COMPACTION_JOBS,
    INGEST_JOBS,
    JOB_UPDATE_TTL,
    CompactionJobCommitted,
    CompactionJobCreated,
    CompactionJobFailed,
    CompactionJobFinished,
    CompactionJobStarted,
    CompactionJobStatus,
    CompactionJobUpdate,
    IngestJobAddedFiles,
    IngestJobFailed,
    IngestJobFinished,
    IngestJobStarted,
    IngestJobStatus,
    IngestJobUpdate,
    IngestJobValidated,
    JobKind,
    JobStatus,
    JobTracker,
    JobUpdate,
    TaskFinished,
    TaskStarted,
    TaskStatus,
    TaskUpdate,
    ValidationResult,
    task_statuses,
    task_update_from_json,
    update_to_json,
    update_type_name,
)

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_dynamodb.type_defs import AttributeValueTypeDef

logger = logging.getLogger(__name__)

Clock = Callable[[], datetime]
"""The current time (timezone-aware); when an update is recorded, for ``UpdateTime`` and ``ExpiryDate``."""

UPDATE_BODY = "UpdateBody"
TABLE_IDS = "TableIds"
TABLE_ID_UNKNOWN = "-"
_FIRST_UPDATE_TIME = "FirstUpdateTime"
_LAST_UPDATE_TIME = "LastUpdateTime"
_LAST_UPDATE_TYPE = "LastUpdateType"
_SAME_MILLISECOND_ATTEMPTS = 1000

_U = TypeVar("_U", bound=JobUpdate)
_S = TypeVar("_S", bound=JobStatus)
_Item = dict[str, "AttributeValueTypeDef"]


def _now() -> datetime:
    return datetime.now(UTC)


def _n(value: int | float) -> AttributeValueTypeDef:
    return {"N": str(value)}


def _s(value: str) -> AttributeValueTypeDef:
    return {"S": value}


def _strings(values: Sequence[str]) -> AttributeValueTypeDef:
    return {"L": [{"S": value} for value in values]}


def _put_optional(item: _Item, name: str, value: str | None) -> None:
    if value is not None:
        item[name] = _s(value)


def _sleeper_job_attributes(update: IngestJobUpdate | CompactionJobUpdate) -> _Item:
    """The attributes Sleeper's Java trackers write for an update, besides the keys and times every update has."""
    ms = to_epoch_ms(update.update_time)
    item: _Item = {}
    _put_optional(item, "JobRunId", update.job_run_id)
    _put_optional(item, TRACKER_TASK_ID, update.task_id)
    if isinstance(update, IngestJobValidated):
        item["ValidationTime"] = _n(ms)
        item["ValidationResult"] = _s(update.result.value)
        item["ValidationReasons"] = _strings(update.reasons)
        item["InputFilesCount"] = _n(update.file_count)
        _put_optional(item, "JsonMessage", update.json_message)
    elif isinstance(update, IngestJobStarted):
        item["StartTime"] = _n(ms)
        item["InputFilesCount"] = _n(update.file_count)
    elif isinstance(update, IngestJobAddedFiles):
        item["FilesWrittenTime"] = _n(ms)
        item["FilesWrittenCount"] = _n(update.file_count)
    elif isinstance(update, IngestJobFinished):
        item["FinishTime"] = _n(ms)
        item["RecordsRead"] = _n(update.rows_read)
        item["RecordsWritten"] = _n(update.rows_written)
        item["FilesWrittenCount"] = _n(update.files_written)
        item["JobCommittedWhenFilesAdded"] = {"BOOL": update.committed_by_separate_file_updates}
    elif isinstance(update, IngestJobFailed | CompactionJobFailed):
        item["FinishTime"] = _n(ms)
        item["FailureReasons"] = _strings(update.reasons)
    elif isinstance(update, CompactionJobCreated):
        item["PartitionId"] = _s(update.partition_id)
        item["InputFilesCount"] = _n(update.input_files_count)
    elif isinstance(update, CompactionJobStarted):
        item["StartTime"] = _n(ms)
    elif isinstance(update, CompactionJobFinished):
        item["FinishTime"] = _n(ms)
        item["RecordsRead"] = _n(update.rows_read)
        item["RecordsWritten"] = _n(update.rows_written)
    else:
        assert isinstance(update, CompactionJobCommitted)
        item["CommitTime"] = _n(ms)
    return item


def _bodies(items: Iterable[_Item], table_name: str) -> list[str]:
    bodies: list[str] = []
    for item in items:
        body = item.get(UPDATE_BODY, {}).get("S")
        if body is None:
            logger.warning("skipping an item of %s with no %s (not written by this port)", table_name, UPDATE_BODY)
            continue
        bodies.append(body)
    return bodies


class DynamoDBJobUpdateStore(Generic[_U]):
    """Implements ``sleeper.core.trackers.jobs.JobUpdateStore`` in a job tracker's updates and lookup tables.

    A table's jobs are the updates stored under the table; rejected jobs are found through the ``by-validation``
    index of the lookup table (eventually consistent), then read in full.

    Args:
        client: The DynamoDB client.
        names: The updates and lookup tables.
        kind: The kind of job whose updates the tables keep.
        ttl: How long DynamoDB keeps an update (``ExpiryDate``).
        clock: The current time, recorded with each update.
    """

    def __init__(
        self,
        client: DynamoDBClient,
        names: JobTrackerTableNames,
        kind: JobKind[_U, Any],
        *,
        ttl: timedelta = JOB_UPDATE_TTL,
        clock: Clock = _now,
    ) -> None:
        self._client = client
        self._names = names
        self._ttl = ttl
        self._clock = clock
        self._read: Callable[[str], _U] = kind.from_json

    def append(self, update: _U) -> None:
        """Stores an update: an item of the updates table, and the job's item of the lookup table updated.

        Raises:
            AwsError: If DynamoDB fails.
        """
        now = self._clock()
        now_ms = to_epoch_ms(now)
        expiry = int((now + self._ttl).timestamp())
        table_id = update.table_id if update.table_id is not None else TABLE_ID_UNKNOWN
        update_type = update_type_name(update)
        item: _Item = {
            TRACKER_TABLE_ID: _s(table_id),
            TRACKER_JOB_ID: _s(update.job_id),
            JOB_ID_AND_UPDATE: _s(f"{update.job_id}|{now_ms}|{secrets.token_hex(4)}"),
            TRACKER_UPDATE_TIME: _n(now_ms),
            TRACKER_UPDATE_TYPE: _s(update_type),
            TRACKER_EXPIRY_DATE: _n(expiry),
            UPDATE_BODY: _s(update_to_json(update)),
            **_sleeper_job_attributes(update),
        }
        with translated(f"PutItem {self._names.updates}"):
            self._client.put_item(TableName=self._names.updates, Item=item)
        expression = (
            "SET #table = :table, #first = if_not_exists(#first, :time), #last = :time, #type = :type,"
            " #expiry = if_not_exists(#expiry, :expiry)"
        )
        names = {
            "#table": TRACKER_TABLE_ID,
            "#first": _FIRST_UPDATE_TIME,
            "#last": _LAST_UPDATE_TIME,
            "#type": _LAST_UPDATE_TYPE,
            "#expiry": TRACKER_EXPIRY_DATE,
            "#tables": TABLE_IDS,
        }
        values: _Item = {
            ":table": _s(table_id),
            ":time": _n(now_ms),
            ":type": _s(update_type),
            ":expiry": _n(expiry),
            ":tables": {"SS": [table_id]},
        }
        if isinstance(update, IngestJobValidated):
            expression += ", #validation = :validation"
            names["#validation"] = LAST_VALIDATION_RESULT
            values[":validation"] = _s(update.result.value)
        with translated(f"UpdateItem {self._names.lookup}"):
            self._client.update_item(
                TableName=self._names.lookup,
                Key={TRACKER_JOB_ID: _s(update.job_id)},
                UpdateExpression=expression + " ADD #tables :tables",
                ExpressionAttributeNames=names,
                ExpressionAttributeValues=values,
            )

    def updates_of_job(self, job_id: str) -> list[_U]:
        """The job's updates in the order they were recorded (empty if the tracker does not know the job)."""
        with translated(f"GetItem {self._names.lookup}"):
            lookup = self._client.get_item(
                TableName=self._names.lookup, Key={TRACKER_JOB_ID: _s(job_id)}, ConsistentRead=True
            ).get("Item")
        if lookup is None:
            return []
        table_ids = lookup.get(TABLE_IDS, {}).get("SS") or [lookup[TRACKER_TABLE_ID]["S"]]
        items: list[_Item] = []
        for table_id in sorted(table_ids):
            items.extend(
                item
                for item in query_items(
                    self._client,
                    {
                        "TableName": self._names.updates,
                        "KeyConditionExpression": "#table = :table AND begins_with(#key, :prefix)",
                        "ExpressionAttributeNames": {"#table": TRACKER_TABLE_ID, "#key": JOB_ID_AND_UPDATE},
                        "ExpressionAttributeValues": {":table": _s(table_id), ":prefix": _s(f"{job_id}|")},
                        "ConsistentRead": True,
                    },
                )
                if item[TRACKER_JOB_ID]["S"] == job_id
            )
        items.sort(key=lambda item: (int(item[TRACKER_UPDATE_TIME]["N"]), item[JOB_ID_AND_UPDATE]["S"]))
        return [self._read(body) for body in _bodies(items, self._names.updates)]

    def updates_of_table(self, table_id: str) -> list[_U]:
        """Every update stored under a table, by job then in the order they were recorded."""
        items = query_key(self._client, self._names.updates, TRACKER_TABLE_ID, table_id)
        return [self._read(body) for body in _bodies(items, self._names.updates)]

    def updates_of_rejected_jobs(self) -> list[_U]:
        """Every update of each job whose last validation rejected it (as the index knows at the time)."""
        return [update for job_id in self._rejected_job_ids() for update in self.updates_of_job(job_id)]

    def _rejected_job_ids(self) -> list[str]:
        """Ids of jobs whose last validation rejected them (from the eventually consistent index)."""
        items = query_key(
            self._client,
            self._names.lookup,
            LAST_VALIDATION_RESULT,
            ValidationResult.REJECTED.value,
            index=VALIDATION_INDEX,
        )
        return sorted({item[TRACKER_JOB_ID]["S"] for item in items})


class DynamoDBJobTracker(JobTracker[_U, _S]):
    """A job tracker (``sleeper.core.trackers.jobs.JobTracker``) in DynamoDB tables; a subclass names the kind.

    Every read and write raises ``AwsError`` if DynamoDB fails.

    Args:
        client: The DynamoDB client.
        table_names: The updates and lookup tables (``kind.table_names(instance_id)``).
        ttl: How long DynamoDB keeps an update (``ExpiryDate``); also the expiry date of derived statuses.
        clock: The current time, recorded with each update.
    """

    kind: ClassVar[JobKind[Any, Any]]

    def __init__(
        self,
        client: DynamoDBClient,
        table_names: JobTrackerTableNames,
        *,
        ttl: timedelta = JOB_UPDATE_TTL,
        clock: Clock = _now,
    ) -> None:
        store: DynamoDBJobUpdateStore[_U] = DynamoDBJobUpdateStore(client, table_names, self.kind, ttl=ttl, clock=clock)
        super().__init__(store, self.kind, ttl=ttl)

    @classmethod
    def for_instance(cls, client: DynamoDBClient, instance_id: str, *, ttl: timedelta = JOB_UPDATE_TTL) -> Self:
        """The tracker of an instance, in the tables Sleeper names for it."""
        return cls(client, cls.kind.table_names(instance_id), ttl=ttl)


class DynamoDBIngestJobTracker(DynamoDBJobTracker[IngestJobUpdate, IngestJobStatus]):
    """Implements ``sleeper.core.trackers.ingest.IngestJobTracker`` in Sleeper's ingest job tracker tables."""

    kind = INGEST_JOBS


class DynamoDBCompactionJobTracker(DynamoDBJobTracker[CompactionJobUpdate, CompactionJobStatus]):
    """Implements ``sleeper.core.trackers.compaction.CompactionJobTracker`` in Sleeper's compaction tracker tables."""

    kind = COMPACTION_JOBS


class DynamoDBTaskTracker:
    """Implements ``sleeper.core.trackers.task.TaskTracker`` in a Sleeper task status table.

    Args:
        client: The DynamoDB client.
        table_name: The task status table (``task_tracker_table_name(instance_id, kind)``).
        ttl: How long DynamoDB keeps an update (``ExpiryDate``); also the expiry date of derived statuses.
        clock: The current time, recorded with each update.
    """

    def __init__(
        self, client: DynamoDBClient, table_name: str, *, ttl: timedelta = JOB_UPDATE_TTL, clock: Clock = _now
    ) -> None:
        self._client = client
        self._table_name = table_name
        self._ttl = ttl
        self._clock = clock

    @classmethod
    def for_instance(
        cls, client: DynamoDBClient, instance_id: str, kind: str, *, ttl: timedelta = JOB_UPDATE_TTL
    ) -> Self:
        """The task tracker of an instance for a kind of task (``"ingest"`` or ``"compaction"``)."""
        return cls(client, task_tracker_table_name(instance_id, kind), ttl=ttl)

    def record(self, update: TaskUpdate) -> None:
        """Stores an update.

        Raises:
            AwsError: If DynamoDB fails.
        """
        now = self._clock()
        now_ms = to_epoch_ms(now)
        item: _Item = {
            TRACKER_TASK_ID: _s(update.task_id),
            TRACKER_UPDATE_TYPE: _s(update_type_name(update)),
            TRACKER_EXPIRY_DATE: _n(int((now + self._ttl).timestamp())),
            UPDATE_BODY: _s(update_to_json(update)),
            **_sleeper_task_attributes(update),
        }
        for attempt in range(_SAME_MILLISECOND_ATTEMPTS):
            item[TRACKER_UPDATE_TIME] = _n(now_ms + attempt)
            try:
                self._client.put_item(
                    TableName=self._table_name,
                    Item=item,
                    ConditionExpression="attribute_not_exists(#time)",
                    ExpressionAttributeNames={"#time": TRACKER_UPDATE_TIME},
                )
                return
            except ClientError as e:
                if error_code(e) != "ConditionalCheckFailedException":
                    raise translate(e, f"PutItem {self._table_name}") from e
            except BotoCoreError as e:
                raise translate(e, f"PutItem {self._table_name}") from e
        raise AwsError(f"PutItem {self._table_name}", "ConditionalCheckFailedException", "no free update time")

    def task(self, task_id: str) -> TaskStatus | None:
        """The status of a task, or None if unknown.

        Raises:
            AwsError: If DynamoDB fails.
        """
        items = query_key(self._client, self._table_name, TRACKER_TASK_ID, task_id)
        statuses = self._statuses(items)
        return statuses[0] if statuses else None

    def all_tasks(self) -> list[TaskStatus]:
        """Every task, ordered by start time.

        Raises:
            AwsError: If DynamoDB fails.
        """
        return self._statuses(scan_items(self._client, {"TableName": self._table_name, "ConsistentRead": True}))

    def tasks_in_progress(self) -> list[TaskStatus]:
        """Tasks that started and have not finished, ordered by start time.

        Raises:
            AwsError: If DynamoDB fails.
        """
        return [status for status in self.all_tasks() if not status.is_finished]

    def _statuses(self, items: Iterable[_Item]) -> list[TaskStatus]:
        ordered = sorted(items, key=lambda item: (item[TRACKER_TASK_ID]["S"], int(item[TRACKER_UPDATE_TIME]["N"])))
        bodies = _bodies(ordered, self._table_name)
        return task_statuses([task_update_from_json(body) for body in bodies], ttl=self._ttl)


def _sleeper_task_attributes(update: TaskUpdate) -> _Item:
    ms = to_epoch_ms(update.update_time)
    if isinstance(update, TaskStarted):
        return {"StartTime": _n(ms)}
    assert isinstance(update, TaskFinished)
    return {
        "FinishTime": _n(ms),
        "MillisecondsOnJobs": _n(round(update.time_spent_on_jobs_seconds * 1000)),
        "NumberOfJobs": _n(update.job_runs),
        "RecordsRead": _n(update.rows_read),
        "RecordsWritten": _n(update.rows_written),
    }
