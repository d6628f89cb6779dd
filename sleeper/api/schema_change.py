"""Changing an existing table's schema and contents as a whole: adding a nullable value column, and truncating.

:func:`add_column` appends one nullable value field to a table's schema (``sleeper table add-column``). The schema is
saved in the table's properties (``sleeper.table.schema``), which a property edit may never change: this is the one
schema change allowed, because it leaves every data file readable. Files written before the change lack the column,
and every reader gives nulls for it (:meth:`sleeper.io.parquet_reader.SortedFileReader.read_plan`): direct and
queued queries, bulk export, Athena and compaction, which writes the column (nulls for the old rows) into its output.
Nothing is rewritten when the column is added: old files gain the column only as compaction rewrites them. Rows
ingested after the change may hold values for it. A table gaining a column of a value type beyond Sleeper's (such as
``DoubleType``) becomes readable by this port only, as a table created with one
(:attr:`sleeper.core.schema.Schema.uses_port_only_types`).

:func:`truncate` removes every row of a table in one commit and keeps its partition tree (``sleeper table
truncate``): Sleeper's CLEAR_FILES transaction, after which the cleared files are deleted, as Sleeper's table
reinitialisation does (the garbage collector never sees a cleared file, since it is no longer tracked). The files
deleted are exactly those of the state the transaction was appended after.

Both take a :class:`sleeper.api.table.Table` of either runtime; ``Table.add_column`` and ``Table.truncate`` call them.
"""

from __future__ import annotations

import logging
from typing import Any

from sleeper.core import (
    Field,
    FieldType,
    PrimitiveType,
    PropertyError,
    Schema,
    SchemaError,
    SleeperError,
    ValueType,
    describe_type,
)
from sleeper.core.properties import ICEBERG_NAME
from sleeper.core.statestore import FilesState
from sleeper.core.statestore.transactions import ClearFilesTransaction
from sleeper.io import UnsafeDeleteError, delete_in_table, filesystem_path, sketches_path
from sleeper.iterators import IteratorConfigError, check_table_iterators

__all__ = ["TYPE_ALIASES", "add_column", "parse_field_type", "truncate"]

_LOG = logging.getLogger(__name__)

TYPE_ALIASES: dict[str, object] = {
    "int": "IntType",
    "long": "LongType",
    "string": "StringType",
    "bytes": "ByteArrayType",
    "float": "FloatType",
    "double": "DoubleType",
    "boolean": "BooleanType",
    "date": "DateType",
    "timestamp": {"TimestampType": {"unit": "us"}},
}
"""Short names :func:`parse_field_type` accepts for a type, beside Sleeper's schema JSON names."""


_TYPE_NAMES = [t.value for t in PrimitiveType] + [t.value for t in ValueType]


def parse_field_type(text: str) -> FieldType:
    """A value field type from its text: a name of Sleeper's schema JSON (``LongType``, ``DoubleType``), a short name
    of :data:`TYPE_ALIASES` (``long``, ``double``, ``timestamp`` for microseconds with no zone), or a JSON type object
    (``{"TimestampType": {"unit": "ms", "timeZone": "UTC"}}``, ``{"ListType": {"elementType": "StringType"}}``).

    Raises:
        SchemaError: If the text names no type, saying what is accepted.
    """
    import json

    stripped = text.strip()
    raw: object = TYPE_ALIASES.get(stripped.lower(), stripped)
    if isinstance(raw, str) and raw.startswith("{"):
        try:
            raw = json.loads(raw)
        except json.JSONDecodeError as e:
            raise SchemaError(f"type {text!r} is not valid JSON: {e}") from None
    try:
        parsed = Schema.from_dict(
            {
                "rowKeyFields": [{"name": "key", "type": "LongType"}],
                "valueFields": [{"name": "value", "type": raw, "nullable": True}],
            }
        )
    except SchemaError as e:
        if not isinstance(raw, str):
            why = str(e).removeprefix("field 'value'").lstrip(": ")
            raise SchemaError(f"column type {text!r}: {why}") from None
        raise SchemaError(
            f"unknown column type {text!r}: give a schema JSON type name ({', '.join(_TYPE_NAMES)}), a short name "
            f"({', '.join(TYPE_ALIASES)}) or a JSON type object such as "
            '\'{"TimestampType": {"unit": "ms", "timeZone": "UTC"}}\''
        ) from None
    return parsed.value_fields[0].type


def add_column(table: Any, name: str, type: FieldType | str, *, nullable: bool = True) -> Any:
    """Appends a nullable value field to a table's schema and saves it; returns the table with the new schema.

    Every file written before reads the new column as nulls; rows ingested afterwards may hold values for it;
    compaction writes it into its output. No data file is rewritten here. See the module docs. A ``Table`` is a
    snapshot of the table's properties: the one given keeps the old schema (rows ingested through it would lose the
    column's values), so go on with the one returned, or look the table up again.

    Args:
        table: The table (its properties are read again from the instance before the change).
        name: The new column's name: not a field of the table already.
        type: Its type: a :data:`sleeper.core.schema.FieldType`, or its text (:func:`parse_field_type`).
        nullable: Must be True: the files already written hold no value for the column.

    Raises:
        SchemaError: If the name is empty or taken, the column is not nullable, the type is unknown, or the table's
            Iceberg view cannot hold the type; nothing is saved.
        PropertyError: If the table's rules (aggregations, filters, iterator) refuse the new schema, naming the
            property to change first; nothing is saved.
        TableNotFoundError: If the table no longer exists.
    """
    field_type = parse_field_type(type) if isinstance(type, str) else type
    if not isinstance(name, str) or not name.strip():
        raise SchemaError("a new column needs a name")
    if not nullable:
        raise SchemaError(
            f"column {name!r} must be nullable: the table's files written before it was added hold no values for it"
        )
    current = table.instance.table(table.name)
    if current.table_id != table.table_id:
        raise SleeperError(f"table {table.name!r} was replaced by another table of that name; nothing changed")
    schema = current.schema
    if schema.has_field(name):
        group = "row key" if name in schema.row_key_names else "sort key" if name in schema.sort_key_names else "value"
        existing = describe_type(schema.field(name).type)
        raise SchemaError(
            f"table {table.name} already has a {group} field {name!r} ({existing}): choose another column name"
        )
    new_schema = Schema(
        schema.row_key_fields, schema.sort_key_fields, (*schema.value_fields, Field(name, field_type, True))
    )
    properties = current.properties.copy()
    properties.set_schema(new_schema)
    if properties.get(ICEBERG_NAME):
        from sleeper.iceberg import type_refusal

        refused = type_refusal(new_schema)
        if refused is not None:
            raise SchemaError(
                f"table {table.name} has an Iceberg view ({ICEBERG_NAME.name}), which cannot hold the column: {refused}"
            )
    properties.validate_all()
    try:
        check_table_iterators(properties)
    except IteratorConfigError as e:
        raise PropertyError(str(e)) from e
    current.instance.properties_store.save_table(current.table_id, dict(properties.items()))
    saved: Any = current.instance.table(current.name)
    return saved


def truncate(table: Any) -> Any:
    """Removes every row of a table in one atomic commit, keeping its partition tree; returns the table.

    The commit is Sleeper's CLEAR_FILES transaction: a query sees the table either with every row or with none.
    Rows committed after it stay. The files it cleared (exactly those of the state it was appended after, so a file
    added while the truncate ran is either cleared and deleted or kept) are then deleted, only those under the
    table's data prefix, as Sleeper's table reinitialisation deletes them: a query still reading one may fail, and
    time travel to before the truncation is no longer possible. The table's Iceberg view is withdrawn first and
    published again after, so it never lists a deleted file. An offline table is truncated too (being offline only
    stops scheduled work).

    Raises:
        WithdrawalError: If the table's Iceberg view could not be withdrawn; nothing is truncated.
        TableNotFoundError: If the table does not exist.
    """
    from sleeper.iceberg import reinitialise_with_view

    current = table.instance.table(table.name)
    return reinitialise_with_view(current.instance, current, lambda: _clear_and_delete(current))


def _clear_and_delete(table: Any) -> Any:
    """Commits CLEAR_FILES and deletes the files it cleared (a file outside the table's prefix is logged and left)."""
    seen: list[list[str]] = []

    class _ClearFilesSeen(ClearFilesTransaction):
        """CLEAR_FILES, noting the files of each state it is validated against: the append lands right after the
        last of them."""

        __slots__ = ()

        def validate(self, state: FilesState) -> None:
            seen.append([f.filename for f in state.files()])

    table.state_store.add_transaction(_ClearFilesSeen())
    filesystem = table.instance.filesystem
    for filename in seen[-1] if seen else []:
        for location in (filename, sketches_path(filename)):
            try:
                delete_in_table(filesystem, filesystem_path(location), table.data_prefix)
            except UnsafeDeleteError as e:
                _LOG.warning("Table %s truncated without deleting a file it tracked: %s", table.name, e)
    return table
