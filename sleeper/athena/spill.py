"""Returning a split's rows: inline when they are small, otherwise as blocks spilled to S3, encrypted when asked.

This follows the SDK's ``S3BlockSpiller``: rows collect in a block; when the block grows past the request's
``maxBlockSize`` it is written to ``<split spill key>.<n>`` (n = 0, 1, ...) in the split's spill bucket. At the end,
if anything was spilled or the last block reached ``maxInlineBlockSize``, the rest is spilled too and the response
lists the spilled blocks (``RemoteReadRecordsResponse``); otherwise the rows are returned inline
(``ReadRecordsResponse``).

A spilled block is one Arrow IPC record batch message in the legacy format (the SDK's ``RecordBatchSerDe``). When the
split carries an encryption key it is encrypted with AES-256-GCM (128-bit tag appended, as Java's
``AES/GCM/NoPadding`` does) using the split's key and nonce; the SDK uses the same nonce for every block of a split, so
this does too, as Athena decrypts with it. Encryption needs the ``cryptography`` package.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import pyarrow as pa
from pyarrow import fs as pafs

from sleeper.athena.arrow_ipc import decode_record_batch, encode_record_batch
from sleeper.athena.exceptions import INTERNAL_SERVICE, INVALID_INPUT, AthenaConnectorError
from sleeper.athena.protocol import (
    EncryptionKey,
    S3SpillLocation,
    Split,
    read_records_response,
    remote_read_records_response,
)
from sleeper.io import FileSystemOptions, read_bytes, resolve, write_bytes

__all__ = ["BlockSpiller", "decrypt", "encrypt", "read_spilled_block"]


def _aesgcm(key: EncryptionKey) -> Any:
    try:
        from cryptography.hazmat.primitives.ciphers.aead import AESGCM
    except ImportError:  # pragma: no cover - depends on the installation
        raise AthenaConnectorError(
            "spill encryption needs the 'cryptography' package; install it or disable spill encryption",
            error_code=INTERNAL_SERVICE,
        ) from None
    if len(key.nonce) != 12:
        raise AthenaConnectorError(f"expected a 12 byte nonce, got {len(key.nonce)}", error_code=INVALID_INPUT)
    if len(key.key) not in (16, 24, 32):
        raise AthenaConnectorError(
            f"expected a 16, 24 or 32 byte AES key, got {len(key.key)}", error_code=INVALID_INPUT
        )
    return AESGCM(key.key)


def encrypt(key: EncryptionKey, data: bytes) -> bytes:
    """AES-GCM encryption with the key's nonce: ciphertext followed by the 16-byte tag."""
    return bytes(_aesgcm(key).encrypt(key.nonce, data, None))


def decrypt(key: EncryptionKey, data: bytes) -> bytes:
    """Reverses :func:`encrypt`.

    Raises:
        AthenaConnectorError: If the data was not encrypted with this key and nonce.
    """
    from cryptography.exceptions import InvalidTag

    try:
        return bytes(_aesgcm(key).decrypt(key.nonce, data, None))
    except InvalidTag:
        raise AthenaConnectorError("spilled block does not decrypt with the key", error_code=INVALID_INPUT) from None


def _spill_uri(location: S3SpillLocation) -> str:
    return f"s3://{location.bucket}/{location.key}"


def read_spilled_block(
    location: S3SpillLocation,
    schema: pa.Schema,
    encryption_key: EncryptionKey | None,
    *,
    options: FileSystemOptions | None = None,
    filesystem: pafs.FileSystem | None = None,
) -> pa.RecordBatch:
    """Reads one spilled block back, as Athena does (decrypting it when a key is given)."""
    fs, path = resolve(_spill_uri(location), options, filesystem=filesystem)
    data = read_bytes(fs, path)
    if encryption_key is not None:
        data = decrypt(encryption_key, data)
    return decode_record_batch(data, schema, where=f"spilled block {location.key}")


class BlockSpiller:
    """Collects a split's output rows and answers the read request inline or with spilled blocks.

    Args:
        schema: The schema of the rows (the request's).
        split: The split read; its spill location and encryption key are used.
        max_block_size: The largest block to build before spilling it (bytes, by Arrow buffer size).
        max_inline_block_size: The largest block that may be returned inline.
        options: How to reach S3.
        filesystem: A filesystem to spill to instead of S3 (the spill URI's scheme is then only stripped).
    """

    def __init__(
        self,
        schema: pa.Schema,
        split: Split,
        *,
        max_block_size: int,
        max_inline_block_size: int,
        options: FileSystemOptions | None = None,
        filesystem: pafs.FileSystem | None = None,
    ) -> None:
        if not split.spill_location.directory:
            raise AthenaConnectorError("the split's spill location must be a directory", error_code=INVALID_INPUT)
        self._schema = schema
        self._split = split
        self._max_block = max(1, max_block_size)
        self._max_inline = max_inline_block_size
        self._options = options
        self._filesystem = filesystem
        self._pending: list[pa.RecordBatch] = []
        self._pending_bytes = 0
        self._spilled: list[S3SpillLocation] = []
        self.rows = 0

    @property
    def spilled(self) -> tuple[S3SpillLocation, ...]:
        """The blocks spilled so far."""
        return tuple(self._spilled)

    def write_all(self, batches: Iterable[pa.RecordBatch]) -> None:
        """Adds every batch (see :meth:`write`)."""
        for batch in batches:
            self.write(batch)

    def write(self, batch: pa.RecordBatch) -> None:
        """Adds rows, spilling each block that grows past the maximum block size."""
        if batch.num_rows == 0:
            return
        self.rows += batch.num_rows
        row_bytes = max(1, batch.nbytes // batch.num_rows)
        offset = 0
        while offset < batch.num_rows:
            room = max(1, (self._max_block - self._pending_bytes) // row_bytes)
            piece = batch.slice(offset, room)
            offset += piece.num_rows
            self._pending.append(piece)
            self._pending_bytes += piece.nbytes
            if self._pending_bytes >= self._max_block:
                self._spill()

    def _block(self) -> pa.RecordBatch:
        if not self._pending:
            return pa.RecordBatch.from_pylist([], schema=self._schema)
        return pa.Table.from_batches(self._pending, schema=self._schema).combine_chunks().to_batches()[0]

    def _spill(self) -> None:
        block = self._block()
        self._pending, self._pending_bytes = [], 0
        if block.num_rows == 0:
            return
        directory = self._split.spill_location
        location = S3SpillLocation(
            bucket=directory.bucket, key=f"{directory.key}.{len(self._spilled)}", directory=False
        )
        data = encode_record_batch(block, legacy=True)
        if self._split.encryption_key is not None:
            data = encrypt(self._split.encryption_key, data)
        fs, path = resolve(_spill_uri(location), self._options, filesystem=self._filesystem)
        write_bytes(fs, path, data)
        self._spilled.append(location)

    def response(self, catalog_name: str) -> dict[str, Any]:
        """The read records response: inline rows, or the spilled blocks once the rest is spilled too."""
        if not self._spilled and self._pending_bytes < self._max_inline:
            return read_records_response(catalog_name, self._block())
        self._spill()
        return remote_read_records_response(catalog_name, self._schema, self._spilled, self._split.encryption_key)
