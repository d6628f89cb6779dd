"""A Sleeper schema as an Arrow schema, and checks that Arrow data matches it.

The Arrow schema is the one whose Parquet form Sleeper writes: columns in the order row keys, sort keys,
values; ``IntType`` as int32, ``LongType`` as int64, ``StringType`` as UTF-8 strings, ``ByteArrayType`` as binary;
lists with non-null elements named ``element`` and maps with non-null keys and values, as Parquet's standard LIST and
MAP; non-nullable fields are non-nullable (Parquet REQUIRED), nullable ones nullable (OPTIONAL). The value types
beyond Sleeper's are ``FloatType`` float32, ``DoubleType`` float64, ``BooleanType`` bool, ``DateType`` date32 and
``TimestampType`` Arrow's timestamp of the same unit and time zone, so :meth:`Schema.from_arrow` and
:func:`arrow_schema` give each other's types back exactly.

Parquet has no unit of seconds and keeps no time zone name (only whether a timestamp is adjusted to UTC), and the
table's files are written without the Arrow schema, as Sleeper's are: a ``TimestampType`` of unit ``s`` is stored in
milliseconds and one with a time zone as UTC instants. :func:`conform_batch` casts what a file gives back to the table's
type exactly (same instant, same count of seconds).
"""

from __future__ import annotations

import pyarrow as pa

from sleeper.core import Field, FieldType, ListType, MapType, PrimitiveType, Schema, TimestampType, ValueType
from sleeper.io.exceptions import SchemaMismatchError

__all__ = ["arrow_field", "arrow_schema", "arrow_type", "conform_batch", "key_arrow_type"]

_PRIMITIVES: dict[PrimitiveType, pa.DataType] = {
    PrimitiveType.INT: pa.int32(),
    PrimitiveType.LONG: pa.int64(),
    PrimitiveType.STRING: pa.string(),
    PrimitiveType.BYTE_ARRAY: pa.binary(),
}

_VALUE_TYPES: dict[ValueType, pa.DataType] = {
    ValueType.FLOAT: pa.float32(),
    ValueType.DOUBLE: pa.float64(),
    ValueType.BOOLEAN: pa.bool_(),
    ValueType.DATE: pa.date32(),
}


def key_arrow_type(primitive: PrimitiveType) -> pa.DataType:
    """The Arrow type of a primitive Sleeper type."""
    return _PRIMITIVES[primitive]


def arrow_type(field_type: FieldType) -> pa.DataType:
    """The Arrow type of a Sleeper field type."""
    if isinstance(field_type, PrimitiveType):
        return _PRIMITIVES[field_type]
    if isinstance(field_type, ValueType):
        return _VALUE_TYPES[field_type]
    if isinstance(field_type, TimestampType):
        return pa.timestamp(field_type.unit, tz=field_type.time_zone)
    if isinstance(field_type, ListType):
        return pa.list_(pa.field("element", _PRIMITIVES[field_type.element_type], nullable=False))
    if isinstance(field_type, MapType):
        return pa.map_(
            pa.field("key", _PRIMITIVES[field_type.key_type], nullable=False),
            pa.field("value", _PRIMITIVES[field_type.value_type], nullable=False),
        )
    raise TypeError(f"not a Sleeper field type: {field_type!r}")


def arrow_field(field: Field) -> pa.Field:
    """The Arrow field of a Sleeper field (non-nullable unless the field is nullable)."""
    return pa.field(field.name, arrow_type(field.type), nullable=field.nullable)


def arrow_schema(schema: Schema) -> pa.Schema:
    """The Arrow schema of a table: row keys, then sort keys, then values."""
    return pa.schema([arrow_field(f) for f in schema.all_fields])


def conform_batch(batch: pa.RecordBatch, target: pa.Schema, *, where: str = "data") -> pa.RecordBatch:
    """Gives a batch exactly the target schema: its columns in target order, cast where the types differ only in
    representation (such as ``large_string`` to ``string``, or a nullable to a non-nullable field).

    Columns of the batch that the target lacks are dropped.

    Args:
        batch: The data.
        target: The schema to give it, usually :func:`arrow_schema` of the table.
        where: Names the data in error messages (such as the file path).

    Returns:
        The batch itself when it already has the target schema, otherwise a new batch.

    Raises:
        SchemaMismatchError: If a column is missing, cannot be cast safely, or is non-nullable in the target and
            holds nulls.
    """
    if batch.schema.equals(target):
        _check_no_nulls(batch, target, where)
        return batch
    names = batch.schema.names
    columns = []
    for target_field in target:
        if target_field.name not in names:
            raise SchemaMismatchError(f"{where} has no column {target_field.name!r}")
        column = batch.column(target_field.name)
        if not column.type.equals(target_field.type):
            try:
                column = column.cast(target_field.type, safe=True)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as e:
                raise SchemaMismatchError(
                    f"{where} column {target_field.name!r} has type {batch.schema.field(target_field.name).type}, "
                    f"which cannot be read as {target_field.type}: {e}"
                ) from None
        columns.append(column)
    out = pa.RecordBatch.from_arrays(columns, schema=target)
    _check_no_nulls(out, target, where)
    return out


def _check_no_nulls(batch: pa.RecordBatch, target: pa.Schema, where: str) -> None:
    for i, target_field in enumerate(target):
        column = batch.column(i)
        if not target_field.nullable and column.null_count:
            raise SchemaMismatchError(f"{where} column {target_field.name!r} is not nullable but holds nulls")
        if pa.types.is_map(target_field.type) and len(column):
            # keys and items are the whole child arrays, whatever the slice; the offsets bound this slice's part
            start, end = column.offsets[0].as_py(), column.offsets[-1].as_py()
            if column.keys.slice(start, end - start).null_count or column.items.slice(start, end - start).null_count:
                raise SchemaMismatchError(f"{where} column {target_field.name!r} holds a map with a null key or value")
        elif pa.types.is_list(target_field.type) and column.flatten().null_count:
            raise SchemaMismatchError(f"{where} column {target_field.name!r} holds a list with a null element")
