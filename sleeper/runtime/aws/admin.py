"""The admin port (``sleeper.runtime.admin.AdminInstance``) on an instance on AWS (or an emulator: the clients honour
``AWS_ENDPOINT_URL``), found by its id as ``sleeper --instance aws:ID`` names it.

It does what Sleeper's admin client does to a deployed instance: properties are read from and saved to the config
bucket, tables go through the DynamoDB table index and transaction logs, jobs and queries are sent to their SQS
queues, and the reports read the DynamoDB trackers and the queues' counts. Pausing disables the instance's EventBridge
rules (``<id>-<RuleName>``) and resuming enables them. Running compaction, splitting or garbage collection "now" sends
the table's message to the FIFO queue its scheduled rule would send to, so the deployed functions do the work; only
``compact --all`` creates the jobs here, as Sleeper's ``compactAllFiles`` script does.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping, Sequence
from functools import cached_property
from typing import TYPE_CHECKING

import pyarrow as pa

from sleeper.adapters.aws.batcher_store import DynamoDBIngestBatcherStore
from sleeper.adapters.aws.event_rules import EventBridgeRules
from sleeper.api.table import Table, check_table_name
from sleeper.core import operations
from sleeper.core.exceptions import SleeperError
from sleeper.core.naming import queue_name
from sleeper.core.properties import InstanceProperties, TableProperties
from sleeper.core.queue import Queue, QueueNotFoundError
from sleeper.core.schema import KeyValue, Schema
from sleeper.core.table import TableStatus
from sleeper.io.filesystem import delete_in_table
from sleeper.runtime.admin import (
    InstanceAdmin,
    LocalOnlyError,
    OperationReport,
    PropertyChange,
    bulk_import_platform_queue,
    update_instance_properties,
)
from sleeper.runtime.aws.instance import QUEUE_URL_PROPERTIES, AwsInstance, AwsRuntimeConfig

if TYPE_CHECKING:
    from sleeper.core.jobs.bulk_import import BulkImportJob
    from sleeper.core.jobs.ingest import IngestJob
    from sleeper.core.query import Query
    from sleeper.ingest.batcher.ports import IngestBatcherStore
    from sleeper.runtime.local.instance import LocalInstance

__all__ = ["MAX_RULE_NAME", "AwsAdmin", "scheduled_rule_names"]

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


class AwsAdmin(InstanceAdmin[AwsInstance]):
    """The admin port on an instance on AWS.

    Args:
        instance: The instance (its config bucket and how to reach AWS).
    """

    @classmethod
    def for_instance_id(cls, instance_id: str, environ: Mapping[str, str] | None = None) -> AwsAdmin:
        """The instance with an id, found as :meth:`AwsRuntimeConfig.for_instance_id` says; tables are read afresh
        on every use (a command may follow another that changed them)."""
        return cls(AwsInstance(AwsRuntimeConfig.for_instance_id(instance_id, environ), table_cache_seconds=0))

    @property
    def is_local(self) -> bool:
        """Always False."""
        return False

    @property
    def location(self) -> str:
        """``s3://<config bucket>``."""
        return f"s3://{self.instance.config.config_bucket}"

    @property
    def properties(self) -> InstanceProperties:
        """The instance properties, from the config bucket."""
        return self.instance.properties

    def local_instance(self, what: str) -> LocalInstance:
        """Always refuses: this is an instance on AWS.

        Raises:
            LocalOnlyError: Naming what was asked for.
        """
        raise LocalOnlyError(
            f"{what} works only on a local instance directory, not on an instance on AWS "
            f"(aws:{self.instance.instance_id})"
        )

    # --- instance properties -----------------------------------------------------------------------------------
    def save_instance_properties(self, properties: InstanceProperties) -> None:
        """Writes the instance properties to the config bucket (validate them first)."""
        self.instance.properties_store.save_instance(dict(properties.items()))
        self.instance.reload()

    def update_instance_properties(
        self, values: Mapping[str, str], unset: Sequence[str] = (), *, dry_run: bool = False
    ) -> list[PropertyChange]:
        """Validates instance property edits, refusing deployment-only properties, and saves them to the config
        bucket; returns the diff."""

        return update_instance_properties(self, values, unset, dry_run=dry_run)

    # --- tables ------------------------------------------------------------------------------------------------
    def tables(self) -> list[TableStatus]:
        """Every table, by name."""
        return self.instance.tables()

    def table(self, name: str) -> Table[AwsInstance]:
        """A table by name."""
        return self.instance.table(name)

    def table_by_id(self, table_id: str) -> Table[AwsInstance]:
        """A table by id."""
        return self.instance.table_by_id(table_id)

    def create_table(
        self,
        name: str,
        schema: Schema,
        *,
        split_points: Sequence[KeyValue] | None = None,
        properties: Mapping[str, str] | None = None,
    ) -> Table[AwsInstance]:
        """See :meth:`AwsInstance.create_table`."""
        return self.instance.create_table(name, schema, split_points=split_points, properties=properties)

    def rename_table(self, old_name: str, new_name: str) -> Table[AwsInstance]:
        """Renames a table in the table index and its properties (the new name follows the one table name rule)."""
        check_table_name(new_name)
        table = self.instance.table(old_name)
        status = self.instance.table_index.rename(table.table_id, new_name)
        self._save_table_properties(table, {"sleeper.table.name": status.table_name})
        return self.instance.table_by_id(table.table_id)

    def set_table_online(self, name: str, online: bool) -> Table[AwsInstance]:
        """Puts a table online or takes it offline, in the table index and its properties."""
        table = self.instance.table(name)
        self.instance.table_index.set_online(table.table_id, online)
        self._save_table_properties(table, {"sleeper.table.online": "true" if online else "false"})
        return self.instance.table_by_id(table.table_id)

    def delete_table(self, name: str) -> None:
        """Deletes a table: its index entries, transaction logs and snapshots, properties and data files."""
        table = self.instance.table(name)
        self.instance.table_index.delete(table.table_id)
        table.state_store.backend.delete_table(table.table_id)  # DynamoDB, or S3 objects for S3TransactionLogStateStore
        self.instance.properties_store.delete_table(table.table_id)
        prefix = f"{self.instance.data_bucket}/{table.table_id}"
        delete_in_table(self.instance.filesystem, prefix, table.data_prefix, whole_table=True)

    def update_table_properties(self, name: str, values: Mapping[str, str | None]) -> Table[AwsInstance]:
        """Validates and saves table property edits to the config bucket (nothing saved if one is invalid); a value of
        None unsets the property."""
        return self.instance.update_table_properties(name, values)

    def _save_table_properties(self, table: Table[AwsInstance], values: Mapping[str, str]) -> None:
        updated = TableProperties(self.instance.properties, dict(table.properties.items()))
        for key, value in values.items():
            updated.set(key, value)
        self.instance.properties_store.save_table(table.table_id, dict(updated.items()))

    # --- trackers and queues -----------------------------------------------------------------------------------

    @cached_property
    def batcher_store(self) -> IngestBatcherStore:
        """The ingest batcher's DynamoDB store."""
        return DynamoDBIngestBatcherStore.for_instance(self.instance.clients.dynamodb, self.instance.instance_id)

    def queue_names(self) -> list[str]:
        """The logical names of the queues whose URLs the instance properties hold (those the deployment made)."""
        return [name for name, prop in QUEUE_URL_PROPERTIES.items() if self.instance.properties.get(prop)]

    def dead_letter_queue(self, logical_name: str) -> Queue:
        """The dead-letter queue of a queue."""
        return self.instance.dead_letter_queue(logical_name)

    def retry_dead_letters(self, queue_names: Sequence[str] | None = None) -> dict[str, int]:
        """Moves the messages of each dead-letter queue back to its queue; returns how many per queue (non-zero).

        Raises:
            SleeperError: If a queue named is not one of the instance's.
        """
        for name in queue_names or ():
            if name not in QUEUE_URL_PROPERTIES:
                raise SleeperError(f"unknown queue {name!r}; known queues: {', '.join(sorted(QUEUE_URL_PROPERTIES))}")
        moved: dict[str, int] = {}
        for name in list(queue_names) if queue_names else self.queue_names():
            try:
                dead_letters = self.instance.dead_letter_queue(name)
            except QueueNotFoundError:
                if queue_names:
                    raise
                continue  # a queue without a dead-letter queue (the query results queue)
            count = dead_letters.redrive_dead_letters(queue_name(self.instance.instance_id, name))
            if count:
                moved[name] = count
        return moved

    # --- operations --------------------------------------------------------------------------------------------
    def send_ingest_job(self, job: IngestJob) -> str:
        """Sends an ingest job to the ingest job queue, for the ingest tasks."""
        queue = self.instance.queue(operations.INGEST_JOB_Q)
        queue.send(job.to_json())
        return queue.name

    def send_bulk_import_job(self, job: BulkImportJob, *, platform: str | None = None) -> str:
        """Sends a bulk import job to the queue of a platform (EMR Serverless by default).

        Raises:
            UnknownPlatformError: If the platform is not one of ``operations.BULK_IMPORT_PLATFORM_QUEUES``.
            PropertyError: If the platform's stack is not deployed (its queue URL is not set).
        """
        queue = self.instance.queue(bulk_import_platform_queue(platform))
        queue.send(job.to_json())
        return queue.name

    def submit_to_batcher(self, table_name: str, files: Sequence[str]) -> str:
        """Sends a submit request for the files to the batcher's submit queue, as Sleeper's ``sendToIngestBatcher``."""
        self.instance.table(table_name)
        queue = self.instance.queue(operations.INGEST_BATCHER_SUBMIT_Q)
        queue.send(json.dumps({"tableName": table_name, "files": list(files)}))
        return f"Sent {len(files)} files for table {table_name} to {queue.name}"

    def _send_for_table(self, name: str, logical_queue: str, what: str) -> OperationReport:
        table = self.instance.table(name)
        queue = self.instance.queue(logical_queue)
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
        from sleeper.compaction.entry import create_jobs_for_table

        table = self.instance.table(name)
        queue = self.instance.queue(operations.COMPACTION_JOB_Q)
        result = create_jobs_for_table(self.instance, table, compact_all=True)
        if result.pending_batches:
            pending = self.instance.queue(operations.PENDING_COMPACTION_JOB_BATCH_Q)
            where = (
                f"in {len(result.pending_batches)} pending batches on {pending.name}; the deployed dispatcher sends "
                f"them to {queue.name} once the state store committer has assigned their files"
            )
        else:
            where = f"sent to {queue.name} for the compaction tasks"
        lines = [
            f"Table {name}: {result.jobs_created} compaction jobs created over {result.input_files} input files, "
            + where
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
            self.local_instance("gc --orphans")
        return self._send_for_table(name, operations.GC_JOB_Q, "garbage collect it")

    def run_queued_query(self, query: Query, schema: Schema) -> pa.Table | None:
        """Sends the query to the query queue; the deployed functions run it (returns None)."""
        self.instance.run_queued_query(query, schema)
        return None

    # --- pause and resume --------------------------------------------------------------------------------------
    @property
    def _rules(self) -> EventBridgeRules:
        return EventBridgeRules(self.instance.clients.events)

    def _rule_states(self) -> dict[str, str]:
        states = {name: self._rules.state(name) for name in scheduled_rule_names(self.instance.instance_id)}
        found = {name: state for name, state in states.items() if state is not None}
        if not found:
            raise SleeperError(
                f"instance {self.instance.instance_id} has no EventBridge rules (looked for "
                f"{', '.join(sorted(states)[:2])}, ...): is it deployed?"
            )
        return found

    def is_paused(self) -> bool:
        """Whether every rule of the instance is disabled."""
        return all(state == "DISABLED" for state in self._rule_states().values())

    def pause(self) -> None:
        """Disables every enabled rule of the instance.

        Raises:
            SleeperError: If every rule is already disabled (nothing changes).
        """
        enabled = [name for name, state in self._rule_states().items() if state != "DISABLED"]
        if not enabled:
            raise SleeperError("the system is already paused: every EventBridge rule of the instance is disabled")
        for name in enabled:
            self._rules.set_enabled(name, False)

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


if TYPE_CHECKING:
    from sleeper.runtime.admin import AdminInstance
    from sleeper.runtime.local.admin import LocalAdmin

    def _conforms_to_the_admin_port(aws: AwsAdmin, local: LocalAdmin) -> None:
        """Checked by mypy: both admins fit the port the CLI uses."""
        on_aws: AdminInstance = aws
        on_local: AdminInstance = local
        del on_aws, on_local
