"""Time travel on either runtime: a table as it was as of a transaction or a time, and its history as Arrow.

The rules (what "as of" means, what stays readable) are :mod:`sleeper.statestore.history`'s; this module ties them to
a table's properties: files with no references since before now minus the longer of ``sleeper.table.gc.delay.minutes``
and ``sleeper.table.time.travel.retention.minutes`` may be deleted by the garbage collector at any moment.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import pyarrow as pa

from sleeper.core import Schema
from sleeper.core.properties import (
    GARBAGE_COLLECTOR_DELAY_BEFORE_DELETION,
    TIME_TRAVEL_RETENTION_MINUTES,
    TableProperties,
)
from sleeper.statestore import AsOf, SleeperTable, TableHistory, TableStateAsOf, parse_as_of, table_history

__all__ = ["PastTable", "collectable_before", "history_table", "past_table", "read_history"]


def collectable_before(properties: TableProperties, now: datetime | None = None) -> datetime:
    """Files unreferenced since before this time may be deleted by the garbage collector at any moment."""
    minutes = max(
        properties.get_int(GARBAGE_COLLECTOR_DELAY_BEFORE_DELETION),
        properties.get_int(TIME_TRAVEL_RETENTION_MINUTES),
    )
    return (now or datetime.now(tz=UTC)) - timedelta(minutes=minutes)


@dataclass(frozen=True, slots=True)
class PastTable:
    """A table as it was: what a scan or query needs of a table (``sleeper.query.executor.QueryableTable``), with the
    past state in place of the state store."""

    table_id: str
    schema: Schema
    properties: TableProperties
    state_store: TableStateAsOf


def read_history(table: SleeperTable) -> TableHistory:
    """A table's kept history."""
    return table_history(table.state_store, collectable_before=collectable_before(table.properties))


def past_table(table: SleeperTable, as_of: AsOf | str) -> PastTable:
    """A table as it was as of a files transaction number or a time.

    Raises:
        AsOfError: If ``as_of`` is neither a transaction number nor a time.
        StateNotReadableError: If that state cannot be read; names the oldest readable transaction.
    """
    state = read_history(table).state_as_of(parse_as_of(as_of))
    return PastTable(table_id=table.table_id, schema=table.schema, properties=table.properties, state_store=state)


_HISTORY_SCHEMA = pa.schema(
    [
        pa.field("log", pa.string(), nullable=False),
        pa.field("transaction_number", pa.int64(), nullable=False),
        pa.field("type", pa.string(), nullable=False),
        pa.field("time", pa.timestamp("ms", tz="UTC"), nullable=False),
        pa.field("files_added", pa.int64(), nullable=False),
        pa.field("files_removed", pa.int64(), nullable=False),
        pa.field("rows_added", pa.int64(), nullable=False),
        pa.field("rows_removed", pa.int64(), nullable=False),
        pa.field("readable", pa.bool_(), nullable=False),
    ]
)


def history_table(table: SleeperTable) -> pa.Table:
    """A table's kept transactions, oldest first, as Arrow: log, number, type, time, files and rows added and
    removed, and (for the files log) whether the state as of it is readable."""
    history = read_history(table)
    oldest = history.oldest_readable
    records = history.records
    return pa.table(
        {
            "log": [r.log.value for r in records],
            "transaction_number": [r.number for r in records],
            "type": [r.type.value for r in records],
            "time": [r.time for r in records],
            "files_added": [r.files_added for r in records],
            "files_removed": [r.files_removed for r in records],
            "rows_added": [r.rows_added for r in records],
            "rows_removed": [r.rows_removed for r in records],
            "readable": [r.log.value == "files" and oldest is not None and r.number >= oldest for r in records],
        },
        schema=_HISTORY_SCHEMA,
    )
