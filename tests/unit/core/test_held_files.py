"""The layout of holds (sleeper.core.held_files): where they are and what they hold, as the Iceberg publisher writes
them and the garbage collector reads them."""

from __future__ import annotations

import gzip
import json
from datetime import UTC, datetime

import pytest

from sleeper.core.held_files import Hold, HoldFormatError, hold_id_of, hold_location

WHEN = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)


def should_round_trip_a_hold() -> None:
    # Given a hold of two files
    hold = Hold.of(
        "h-1", "t1", WHEN, ["s3a://b/t1/data/partition_x/a.parquet", "s3a://b/t1/data/partition_x/b.parquet"]
    )
    # When stored and read back
    again = Hold.from_bytes(hold.to_bytes(), where="x")
    # Then it is the same hold
    assert again == hold


def should_place_holds_under_the_tables_iceberg_directory() -> None:
    location = hold_location("s3a://bucket/t1", "h-1")
    assert location == "s3a://bucket/t1/iceberg/holds/h-1.json.gz"
    assert hold_id_of(location) == "h-1"
    assert hold_id_of("s3a://bucket/t1/iceberg/holds/notes.txt") is None


@pytest.mark.parametrize("hold_id", ["", "..", "a/b", "x" * 129])
def should_refuse_an_unsafe_hold_id(hold_id: str) -> None:
    with pytest.raises(ValueError, match="hold id"):
        hold_location("s3a://bucket/t1", hold_id)


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (b"plain", "not gzip-compressed JSON"),
        (gzip.compress(mtime=0, data=b"[]"), "not a JSON object"),
        (gzip.compress(mtime=0, data=json.dumps({"holdId": "h", "tableId": "t"}).encode()), "lacks"),
        (
            gzip.compress(
                mtime=0,
                data=json.dumps({"holdId": "h", "tableId": "t", "createdAt": "2026-01-01", "files": []}).encode(),
            ),
            "no time zone",
        ),
        (
            gzip.compress(
                mtime=0,
                data=json.dumps({"holdId": "h", "tableId": "t", "createdAt": WHEN.isoformat(), "files": [1]}).encode(),
            ),
            "files must be a list",
        ),
    ],
    ids=lambda value: value if isinstance(value, str) else None,
)
def should_refuse_a_hold_it_cannot_read_naming_it(data: bytes, reason: str) -> None:
    with pytest.raises(HoldFormatError, match=reason) as caught:
        Hold.from_bytes(data, where="s3a://b/t/iceberg/holds/h.json.gz")
    assert "s3a://b/t/iceberg/holds/h.json.gz" in str(caught.value)
