"""Scheduled per-table triggers (spec 12): each sends one message per online table (body and message group = table
id) to the FIFO queue its registry entry names, so one handler runs per table at a time."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from lambdas._common import LOGGER, aws_instance, lambda_handler
from sleeper.core import operations


def _trigger(name: str) -> dict[str, int]:
    spec = operations.handler(name)
    if spec.sends_to is None:
        raise ValueError(f"handler {name} sends to no queue")
    instance = aws_instance()
    offline = spec.offline_property is not None and instance.properties.get_bool(spec.offline_property)
    sent = instance.send_per_table(spec.sends_to, include_offline=offline)
    LOGGER.info("%s: sent %d table messages to %s", name, sent, spec.sends_to)
    return {"tablesSent": sent}


@lambda_handler
def snapshot_creation(event: Mapping[str, Any], context: object = None) -> dict[str, int]:
    """Starts snapshot creation for every online table."""
    return _trigger(operations.SNAPSHOT_CREATION_TRIGGER)


@lambda_handler
def snapshot_deletion(event: Mapping[str, Any], context: object = None) -> dict[str, int]:
    """Starts old snapshot deletion for every online table."""
    return _trigger(operations.SNAPSHOT_DELETION_TRIGGER)


@lambda_handler
def transaction_deletion(event: Mapping[str, Any], context: object = None) -> dict[str, int]:
    """Starts old transaction deletion for every online table."""
    return _trigger(operations.TRANSACTION_DELETION_TRIGGER)


@lambda_handler
def compaction_job_creation(event: Mapping[str, Any], context: object = None) -> dict[str, int]:
    """Starts compaction job creation for every online table."""
    return _trigger(operations.COMPACTION_JOB_CREATION_TRIGGER)


@lambda_handler
def find_partitions_to_split(event: Mapping[str, Any], context: object = None) -> dict[str, int]:
    """Starts finding partitions to split for every online table."""
    return _trigger(operations.PARTITION_SPLITTING_TRIGGER)


@lambda_handler
def garbage_collection(event: Mapping[str, Any], context: object = None) -> dict[str, int]:
    """Starts garbage collection for every online table (and offline ones if ``sleeper.run.gc.offline``)."""
    return _trigger(operations.GARBAGE_COLLECTOR_TRIGGER)


@lambda_handler
def table_metrics(event: Mapping[str, Any], context: object = None) -> dict[str, int]:
    """Starts publishing metrics for every online table (and offline ones if configured)."""
    return _trigger(operations.TABLE_METRICS_TRIGGER)


@lambda_handler
def iceberg_publish(event: Mapping[str, Any], context: object = None) -> dict[str, int]:
    """Starts publishing every online table's Iceberg view (tables naming none are skipped by the publisher)."""
    return _trigger(operations.ICEBERG_PUBLISH_TRIGGER)
