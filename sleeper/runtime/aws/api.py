"""The front door (:class:`sleeper.api.instance.Instance`) on an instance on AWS (or an emulator: the clients honour
``AWS_ENDPOINT_URL``), found by its id as ``sleeper --instance aws:ID`` and ``sleeper.connect("aws:ID")`` name it.

It does what Sleeper's admin client does to a deployed instance: properties are read from and saved to the config
bucket, tables go through the DynamoDB table index and transaction logs, jobs and queries are sent to their SQS
queues, and the reports read the DynamoDB trackers and the queues' counts. Pausing disables the instance's EventBridge
rules (``<id>-<RuleName>``) and resuming enables them. Running compaction, splitting or garbage collection "now" sends
the table's message to the FIFO queue its scheduled rule would send to, so the deployed functions do the work; only
``compact --all`` creates the jobs here, as Sleeper's ``compactAllFiles`` script does. Running the scheduler, a bulk
import with local Spark and the orphan sweep are refused with :class:`~sleeper.api.instance.LocalOnlyError`.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sleeper.adapters.aws import EventBridgeRules
from sleeper.api import (
    BulkImportReport,
    IngestJobReport,
    Instance,
    LocalOnlyError,
    OperationReport,
    bulk_import_platform_queue,
    job_table_name,
)
from sleeper.core import QueueNotFoundError, SleeperError, counted, operations, queue_name
from sleeper.core.properties import InstanceProperties
from sleeper.runtime.aws.instance import AwsInstance, AwsRuntimeConfig, queue_url_properties

if TYPE_CHECKING:
    from sleeper.api import Table
    from sleeper.bulk_export import BulkExportQuery
    from sleeper.core.jobs import BulkImportJob, IngestJob

__all__ = ["MAX_RULE_NAME", "AwsApi", "scheduled_rule_names"]

MAX_RULE_NAME = 64
"""EventBridge's limit on rule names."""


def scheduled_rule_names(instance_id: str) -> list[str]:
    """The EventBridge rules of an instance's scheduled handlers, as the stacks name them: ``<id>-<RuleName>`` cut to
    64 characters."""
    rules = {
        f"{instance_id}-{spec.trigger.rule}"[:MAX_RULE_NAME]
        for spec in operations.HANDLERS
        if spec.trigger.kind is operations.TriggerKind.SCHEDULE and spec.trigger.rule is not None
    }
    return sorted(rules)


class AwsApi(Instance):
    """The front door on an instance on AWS.

    Args:
        runtime: The instance (its config bucket and how to reach AWS).
    """

    runtime: AwsInstance

    def __init__(self, runtime: AwsInstance) -> None:
        super().__init__(runtime)

    @classmethod
    def for_instance_id(cls, instance_id: str, environ: Mapping[str, str] | None = None) -> AwsApi:
        """The instance with an id, found as :meth:`AwsRuntimeConfig.for_instance_id` says; tables are read afresh
        on every use (a command may follow another that changed them)."""
        return cls(AwsInstance(AwsRuntimeConfig.for_instance_id(instance_id, environ), table_cache_seconds=0))

    @property
    def location(self) -> str:
        """``aws:<instance id>``."""
        return f"aws:{self.runtime.instance_id}"

    @property
    def location_fields(self) -> dict[str, str]:
        """``{"configBucket": "s3://<config bucket>"}``."""
        return {"configBucket": f"s3://{self.runtime.config.config_bucket}"}

    @property
    def deployed(self) -> bool:
        """Always True: the CDK stacks build the instance from its properties."""
        return True

    # --- instance properties -----------------------------------------------------------------------------------
    def save_instance_properties(self, properties: InstanceProperties) -> None:
        """Writes the instance properties to the config bucket (validate them first)."""
        self.runtime.properties_store.save_instance(dict(properties.items()))
        self.runtime.reload()

    # --- tables ------------------------------------------------------------------------------------------------
    # --- queues and dead letters --------------------------------------------------------------------------------
    def queue_names(self) -> list[str]:
        """The logical names of the queues whose URLs the instance properties hold (those the deployment made)."""
        return [name for name, prop in queue_url_properties().items() if self.runtime.properties.get(prop)]

    def retry_dead_letters(self, queue_names: Sequence[str] | None = None) -> dict[str, int]:
        """Moves the messages of each dead-letter queue back to its queue; returns how many per queue (non-zero).

        Raises:
            SleeperError: If a queue named is not one of the instance's.
        """
        for name in queue_names or ():
            if name not in (known := queue_url_properties()):
                raise SleeperError(f"unknown queue {name!r}; known queues: {', '.join(sorted(known))}")
        moved: dict[str, int] = {}
        for name in list(queue_names) if queue_names else self.queue_names():
            try:
                dead_letters = self.runtime.dead_letter_queue(name)
            except QueueNotFoundError:
                if queue_names:
                    raise
                continue  # a queue without a dead-letter queue (the query results queue)
            count = dead_letters.redrive_dead_letters(queue_name(self.runtime.instance_id, name))
            if count:
                moved[name] = count
        return moved

    # --- operations --------------------------------------------------------------------------------------------
    def send_ingest_job(self, job: IngestJob) -> IngestJobReport:
        """Sends an ingest job to the ingest job queue, for the ingest tasks: S3 files as they are; local files are
        first staged as one Parquet file under ``for_ingest/`` in the data bucket, as ``Table.ingest`` does (the tasks
        cannot read this machine's files)."""
        from sleeper.api import send_ingest_job

        schema = self.table(job_table_name(job)).schema
        sent = send_ingest_job(self.runtime, job_table_name(job), schema, list(job.files), job_id=job.id)
        return IngestJobReport(sent.job_id, job_table_name(job), "SENT", sent_to=sent.queue)

    def run_ingest_job(self, job: IngestJob) -> IngestJobReport:
        """Refused: on AWS an ingest job runs on the instance's ingest tasks.

        Raises:
            LocalOnlyError: Always.
        """
        raise self._local_only("running an ingest job in this process (send it to the ingest job queue)")

    def send_bulk_import_job(self, job: BulkImportJob, *, platform: str | None = None) -> str:
        """Sends a bulk import job to the queue of a platform (EMR Serverless by default).

        Raises:
            UnknownPlatformError: If the platform is not one of ``operations.BULK_IMPORT_PLATFORM_QUEUES``.
            PropertyError: If the platform's stack is not deployed (its queue URL is not set).
        """
        queue = self.runtime.queue(bulk_import_platform_queue(platform))
        queue.send(job.to_json())
        return queue.name

    def run_bulk_import_job(self, job: BulkImportJob) -> BulkImportReport:
        """Refused: on AWS a bulk import job runs on a platform of the instance (send it with ``--queue``).

        Raises:
            LocalOnlyError: Always.
        """
        raise self._local_only("bulk-import with Spark local[*] (use --queue on AWS)")

    def _export(
        self, table: Table[Any], query: BulkExportQuery, directory: str | Path | None, *, wait: bool, timeout: float
    ) -> dict[str, Any]:
        """Sends the export to the bulk export queue and, with ``wait``, polls the query tracker (where an export is
        tracked) until it finishes, then lists the files written under the bulk export bucket."""
        from pyarrow import fs as pafs

        from sleeper.core import join_under
        from sleeper.io import resolve

        if directory is not None:
            raise SleeperError(
                "on AWS a bulk export is written to the instance's bulk export bucket; leave out DIR "
                "(DIR is where a local instance's export goes)"
            )
        self.runtime.queue(operations.BULK_EXPORT_Q).send(query.to_json())
        result: dict[str, Any] = {"exportId": query.export_id, "tableId": table.table_id, "state": "SENT"}
        if not wait:
            return result
        tracker = self.runtime.query_tracker
        deadline = time.monotonic() + timeout
        while True:
            status = tracker.status(query.export_id)
            if status is not None and status.last_known_state.is_finished:
                break
            if time.monotonic() > deadline:
                raise SleeperError(
                    f"bulk export {query.export_id} did not finish within {timeout:.0f} s; "
                    f"see 'sleeper report queries' (the export is tracked as a query)"
                )
            time.sleep(2.0)
        root = join_under(self.runtime.bulk_export_uri, table.table_id, query.export_id)
        filesystem, path = resolve(root, self.runtime.filesystem_options)
        infos = filesystem.get_file_info(pafs.FileSelector(path, allow_not_found=True))
        files = sorted(f"s3://{info.path}" for info in infos if info.type == pafs.FileType.File)
        result.update(state=status.last_known_state.value, rows=status.row_count, files=files)
        if status.error_message:
            result["error"] = status.error_message
        return result

    def submit_to_batcher(self, table_name: str, files: Sequence[str]) -> str:
        """Sends a submit request for the files to the batcher's submit queue, as Sleeper's ``sendToIngestBatcher``."""
        self.runtime.table(table_name)
        queue = self.runtime.queue(operations.INGEST_BATCHER_SUBMIT_Q)
        queue.send(json.dumps({"tableName": table_name, "files": list(files)}))
        return f"Sent {counted(len(files), 'file')} for table {table_name} to {queue.name}"

    def _send_for_table(self, name: str, logical_queue: str, what: str) -> OperationReport:
        table = self.runtime.table(name)
        queue = self.runtime.queue(logical_queue)
        message_id = queue.send(table.table_id, group_id=table.table_id, dedup_id=str(uuid.uuid4()))
        lines = [f"Table {name}: sent to {queue.name}; the deployed functions will {what}"]
        if not table.status.online:
            lines.append(f"Table {name} is offline: the functions may skip it")
        return OperationReport(
            {"tableName": name, "tableId": table.table_id, "queue": queue.name, "messageId": message_id}, lines
        )

    def compact_now(self, name: str, *, compact_all: bool = False, wait: bool = True) -> OperationReport:
        """Sends the table to the compaction job creation queue; with ``compact_all``, creates jobs over every file
        here (as Sleeper's ``compactAllFiles``) and sends them to the compaction job queue, or, when the table assigns
        through the committer, to pending batches the deployed dispatcher sends once assigned. Never waits."""
        if not compact_all:
            return self._send_for_table(name, operations.COMPACTION_JOB_CREATION_Q, "create its compaction jobs")
        from sleeper.compaction import create_jobs_for_table

        table = self.runtime.table(name)
        queue = self.runtime.queue(operations.COMPACTION_JOB_Q)
        result = create_jobs_for_table(self.runtime, table, compact_all=True)
        if result.pending_batches:
            pending = self.runtime.queue(operations.PENDING_COMPACTION_JOB_BATCH_Q)
            where = (
                f"in {len(result.pending_batches)} pending batches on {pending.name}; the deployed dispatcher sends "
                f"them to {queue.name} once the state store committer has assigned their files"
            )
        else:
            where = f"sent to {queue.name} for the compaction tasks"
        lines = [
            f"Table {name}: {counted(result.jobs_created, 'compaction job')} created over "
            f"{counted(result.input_files, 'input file')}, " + where
        ]
        return OperationReport({**result.to_dict(), "queue": queue.name}, lines)

    def split_now(self, name: str) -> OperationReport:
        """Sends the table to the queue of the function that finds partitions to split."""
        return self._send_for_table(name, operations.FIND_PARTITIONS_TO_SPLIT_Q, "find partitions to split")

    def gc_now(self, name: str, *, orphans: bool = False, dry_run: bool = False) -> OperationReport:
        """Sends the table to the garbage collector's queue.

        Raises:
            LocalOnlyError: With ``orphans``: the orphan sweep runs only on a local instance.
        """
        if orphans:
            raise self._local_only("gc --orphans")
        return self._send_for_table(name, operations.GC_JOB_Q, "garbage collect it")

    def run(
        self,
        *,
        until_idle: bool = False,
        poll_seconds: float = 1.0,
        workers: int = 1,
        stop: Any = None,
    ) -> None:
        """Refused: on AWS the deployed functions and tasks do this work.

        Raises:
            LocalOnlyError: Always.
        """
        raise self._local_only("run")

    def _local_only(self, what: str) -> LocalOnlyError:
        return LocalOnlyError(
            f"{what} works only on a local instance directory, not on an instance on AWS "
            f"(aws:{self.runtime.instance_id})"
        )

    # --- pause and resume --------------------------------------------------------------------------------------
    @property
    def _rules(self) -> EventBridgeRules:
        return EventBridgeRules(self.runtime.clients.events)

    def _rule_states(self) -> dict[str, str]:
        states = {name: self._rules.state(name) for name in scheduled_rule_names(self.runtime.instance_id)}
        found = {name: state for name, state in states.items() if state is not None}
        if not found:
            raise SleeperError(
                f"instance {self.runtime.instance_id} has no EventBridge rules (looked for "
                f"{', '.join(sorted(states)[:2])}, ...): is it deployed?"
            )
        return found

    def is_paused(self) -> bool:
        """Whether every rule of the instance is disabled."""
        return all(state == "DISABLED" for state in self._rule_states().values())

    def pause(self) -> str:
        """Disables every enabled rule of the instance.

        Raises:
            SleeperError: If every rule is already disabled (nothing changes).
        """
        enabled = [name for name, state in self._rule_states().items() if state != "DISABLED"]
        if not enabled:
            raise SleeperError("the system is already paused: every EventBridge rule of the instance is disabled")
        for name in enabled:
            self._rules.set_enabled(name, False)
        return (
            "Paused: no compaction, splitting, garbage collection or snapshots are scheduled\n"
            "(the instance's EventBridge rules are disabled)"
        )

    def resume(self) -> None:
        """Enables every disabled rule of the instance.

        Raises:
            SleeperError: If no rule is disabled (nothing changes).
        """
        disabled = [name for name, state in self._rule_states().items() if state == "DISABLED"]
        if not disabled:
            raise SleeperError("the system is not paused: every EventBridge rule of the instance is enabled")
        for name in disabled:
            self._rules.set_enabled(name, True)
