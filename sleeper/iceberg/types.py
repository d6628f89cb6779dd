"""The Arrow schema an Iceberg view is created with, and the value types it cannot hold.

pyiceberg makes the view's Iceberg schema from an Arrow schema: ``IntType`` is ``int``, ``LongType`` ``long``,
``StringType`` ``string``, ``ByteArrayType`` ``binary``, lists and maps likewise; and the value types beyond Sleeper's
(:class:`sleeper.core.schema.ValueType`, :class:`sleeper.core.schema.TimestampType`): ``FloatType`` is ``float``,
``DoubleType`` ``double``, ``BooleanType`` ``boolean``, ``DateType`` ``date``, a ``TimestampType`` without a time zone
``timestamp`` and one with a time zone ``timestamptz``. Iceberg's timestamps are microseconds: units ``s`` and ``ms``
widen exactly (the table's files hold them as Parquet milliseconds, which readers widen), while ``ns`` is refused,
since Iceberg before format version 3 cannot hold it. ``timestamptz`` keeps the instant and no zone name (the files
hold UTC instants), so a field with any time zone is given to pyiceberg as ``UTC``.
"""

from __future__ import annotations

import pyarrow as pa

from sleeper.core import Schema, TimestampType, describe_type
from sleeper.io import arrow_field

__all__ = ["type_refusal", "view_arrow_schema"]


def type_refusal(schema: Schema) -> str | None:
    """Why the view cannot hold a field of the schema (a ``TimestampType`` of unit ``ns``), or None if it can."""
    refused = [
        f"{f.name!r} is {describe_type(f.type)}"
        for f in schema.value_fields
        if isinstance(f.type, TimestampType) and f.type.unit == "ns"
    ]
    if not refused:
        return None
    return (
        f"an Iceberg view holds timestamps of unit s, ms or us only, and {', '.join(refused)}: Iceberg timestamps "
        "are microseconds"
    )


def view_arrow_schema(schema: Schema) -> pa.Schema:
    """The Arrow schema of the view: the table's, with every time zone of a timestamp given as ``UTC``."""
    fields = []
    for f in schema.all_fields:
        field = arrow_field(f)
        if isinstance(f.type, TimestampType) and f.type.time_zone is not None:
            field = field.with_type(pa.timestamp(f.type.unit, tz="UTC"))
        fields.append(field)
    return pa.schema(fields)
