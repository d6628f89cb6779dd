"""Spilling a split's rows: when blocks spill, their encryption, and reading them back."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from pyarrow import fs as pafs

from sleeper.athena.exceptions import AthenaConnectorError
from sleeper.athena.protocol import EncryptionKey, S3SpillLocation, Split
from sleeper.athena.spill import BlockSpiller, decrypt, encrypt, read_spilled_block
from tests.unit.athena import federation_requests as fr

pytestmark = pytest.mark.integration

KEY = EncryptionKey(key=bytes(range(32)), nonce=bytes(range(12)))


def _split(key: EncryptionKey | None) -> Split:
    return Split(
        spill_location=S3SpillLocation(bucket="spill", key="prefix/q/split"), encryption_key=key, properties={}
    )


def _rows(n: int) -> pa.RecordBatch:
    return pa.record_batch(
        [pa.array(range(n), pa.int64()), pa.array([f"v{i:06d}" for i in range(n)])], names=["k", "v"]
    )


def should_encrypt_as_aes_gcm_with_tag_appended() -> None:
    # Given
    data = b"arrow record batch"

    # When
    sealed = encrypt(KEY, data)

    # Then
    assert len(sealed) == len(data) + 16
    assert AESGCM(KEY.key).decrypt(KEY.nonce, sealed, None) == data
    assert decrypt(KEY, sealed) == data
    with pytest.raises(AthenaConnectorError):
        decrypt(EncryptionKey(key=bytes(32), nonce=KEY.nonce), sealed)


def should_return_small_results_inline() -> None:
    # Given
    spiller = BlockSpiller(_rows(1).schema, _split(KEY), max_block_size=1_000_000, max_inline_block_size=1_000_000)

    # When
    spiller.write(_rows(10))
    response = spiller.response("c")

    # Then
    assert response["@type"] == "ReadRecordsResponse"
    assert fr.decode_block(response["records"]).equals(_rows(10))


@pytest.mark.parametrize("key", [KEY, None], ids=["encrypted", "plain"])
def should_spill_blocks_over_the_size_limits_and_read_them_back(tmp_path: Path, key: EncryptionKey | None) -> None:
    # Given
    filesystem = pafs.SubTreeFileSystem(str(tmp_path), pafs.LocalFileSystem())
    (tmp_path / "spill" / "prefix" / "q").mkdir(parents=True)
    rows = _rows(5000)
    spiller = BlockSpiller(
        rows.schema, _split(key), max_block_size=20_000, max_inline_block_size=10_000, filesystem=filesystem
    )

    # When
    spiller.write(rows.slice(0, 3000))
    spiller.write(rows.slice(3000))
    response = spiller.response("c")

    # Then
    assert response["@type"] == "RemoteReadRecordsResponse"
    locations = [S3SpillLocation.from_dict(b) for b in response["remoteBlocks"]]
    assert [loc.key for loc in locations] == [f"prefix/q/split.{i}" for i in range(len(locations))]
    assert len(locations) > 1
    assert EncryptionKey.from_dict(response["encryptionKey"]) == key
    blocks = [read_spilled_block(loc, rows.schema, key, filesystem=filesystem) for loc in locations]
    assert pa.Table.from_batches(blocks).equals(pa.Table.from_batches([rows]))
    if key is not None:
        raw = (tmp_path / "spill" / locations[0].key).read_bytes()
        assert b"v000000" not in raw
