"""Arrow data as the federation protocol carries it: IPC messages, base64 in JSON.

A schema is one encapsulated IPC schema message; a record batch is one IPC record batch message (no schema, no
end-of-stream marker). From serialisation version 3 on, the SDK writes the current IPC format (each message starts
with the ``0xFFFFFFFF`` continuation marker, metadata version V5); versions 1 and 2, and every spilled block, use the
legacy format (no continuation marker, metadata version V4). Both formats are read.

A *block* is ``{"aId": <allocator id>, "schema": <schema>, "records": <batch, or "" when it has no rows>}``.
"""

from __future__ import annotations

import base64
import binascii
import uuid
from collections.abc import Mapping
from typing import Any

import pyarrow as pa
import pyarrow.ipc as ipc

from sleeper.athena.exceptions import INVALID_INPUT, AthenaConnectorError

__all__ = [
    "b64decode",
    "b64encode",
    "decode_block",
    "decode_record_batch",
    "decode_schema",
    "encode_block",
    "encode_record_batch",
    "encode_schema",
]

_LEGACY = ipc.IpcWriteOptions(use_legacy_format=True, metadata_version=ipc.MetadataVersion.V4)
_LEGACY_EOS = 4


def b64encode(data: bytes) -> str:
    """Standard base64 with padding, as Jackson writes binary fields."""
    return base64.b64encode(data).decode("ascii")


def b64decode(text: object, *, where: str) -> bytes:
    """Reads a base64 field.

    Raises:
        AthenaConnectorError: If the field is not base64 text.
    """
    if not isinstance(text, str):
        raise AthenaConnectorError(f"{where} must be base64 text, got {type(text).__name__}", error_code=INVALID_INPUT)
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError) as e:
        raise AthenaConnectorError(f"{where} is not valid base64: {e}", error_code=INVALID_INPUT) from None


def _legacy_stream(schema: pa.Schema, batch: pa.RecordBatch | None) -> bytes:
    sink = pa.BufferOutputStream()
    with ipc.new_stream(sink, schema, options=_LEGACY) as writer:
        if batch is not None:
            writer.write_batch(batch)
    return bytes(sink.getvalue().to_pybytes())


def encode_schema(schema: pa.Schema, *, legacy: bool = False) -> bytes:
    """One IPC schema message."""
    if legacy:
        return _legacy_stream(schema, None)[:-_LEGACY_EOS]
    return bytes(schema.serialize().to_pybytes())


def encode_record_batch(batch: pa.RecordBatch, *, legacy: bool = False) -> bytes:
    """One IPC record batch message (the legacy form is what the SDK writes to spill files)."""
    if legacy:
        schema_length = len(encode_schema(batch.schema, legacy=True))
        return _legacy_stream(batch.schema, batch)[schema_length:-_LEGACY_EOS]
    return bytes(batch.serialize().to_pybytes())


def decode_schema(data: bytes, *, where: str = "schema") -> pa.Schema:
    """Reads an IPC schema message in either format.

    Raises:
        AthenaConnectorError: If the bytes are not a schema message.
    """
    try:
        return ipc.read_schema(pa.py_buffer(data))
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, OSError) as e:
        raise AthenaConnectorError(f"{where} is not an Arrow schema message: {e}", error_code=INVALID_INPUT) from None


def decode_record_batch(data: bytes, schema: pa.Schema, *, where: str = "records") -> pa.RecordBatch:
    """Reads an IPC record batch message in either format.

    Raises:
        AthenaConnectorError: If the bytes are not a record batch of the schema.
    """
    try:
        return ipc.read_record_batch(pa.py_buffer(data), schema)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, OSError) as e:
        raise AthenaConnectorError(f"{where} is not an Arrow record batch: {e}", error_code=INVALID_INPUT) from None


def encode_block(batch: pa.RecordBatch, *, allocator_id: str | None = None) -> dict[str, Any]:
    """A block: the batch's schema and rows (``records`` is empty text when there are no rows)."""
    return {
        "aId": allocator_id or str(uuid.uuid4()),
        "schema": b64encode(encode_schema(batch.schema)),
        "records": b64encode(encode_record_batch(batch)) if batch.num_rows else "",
    }


def decode_block(block: object, *, where: str = "block") -> pa.RecordBatch:
    """Reads a block; a block without rows gives an empty batch of its schema.

    Raises:
        AthenaConnectorError: If it is not a block.
    """
    if not isinstance(block, Mapping):
        raise AthenaConnectorError(f"{where} must be an object", error_code=INVALID_INPUT)
    schema = decode_schema(b64decode(block.get("schema"), where=f"{where}.schema"), where=f"{where}.schema")
    records = block.get("records")
    if records in (None, ""):
        return pa.RecordBatch.from_pylist([], schema=schema)
    return decode_record_batch(b64decode(records, where=f"{where}.records"), schema, where=f"{where}.records")
