"""Where a local bulk export may write (``sleeper.bulk_export.local.export_root``): a local directory or an S3 URI;
any other location is refused with the reason before anything is planned, tracked or written, whoever calls the
shared export path (the CLI or Python)."""

from __future__ import annotations

import os
from pathlib import Path

import pyarrow as pa
import pytest

from sleeper.bulk_export.local import export_root, export_table
from sleeper.bulk_export.model import BulkExportQuery
from sleeper.core.schema import Field, PrimitiveType, Schema
from sleeper.io.exceptions import UnsupportedLocationError
from sleeper.runtime.local.instance import LocalInstance

pytestmark = pytest.mark.integration

SCHEMA = Schema.of(row_keys=[Field("key", PrimitiveType.LONG)], values=[Field("value", PrimitiveType.STRING)])


@pytest.mark.parametrize(
    ("root", "expected"),
    [
        ("s3://bucket/exports", "s3://bucket/exports"),
        ("s3a://bucket", "s3a://bucket"),
        ("file:///tmp/exports", "/tmp/exports"),
        ("exports", os.path.abspath("exports")),
    ],
)
def should_keep_s3_uris_and_make_local_paths_absolute(root: str, expected: str) -> None:
    assert export_root(root) == expected


@pytest.mark.parametrize(
    ("root", "reason"),
    [
        ("gs://bucket/x", "scheme 'gs' is not s3://"),
        ("s3:/bucket/x", "missing slash"),
        ("S3:bucket", "missing slash"),
        ("s3://", "no bucket"),
        ("s3:///x", "no bucket"),
        ("file://relative", "absolute path"),
        ("  ", "empty"),
    ],
)
def should_refuse_a_location_naming_why(root: str, reason: str) -> None:
    with pytest.raises(UnsupportedLocationError, match=reason):
        export_root(root)


def should_refuse_before_tracking_or_writing_anything(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Given a local table with rows
    instance = LocalInstance.create(tmp_path / "instance")
    table = instance.create_table("t", SCHEMA)
    table.ingest(pa.table({"key": pa.array(range(10), pa.int64()), "value": ["v"] * 10}))
    monkeypatch.chdir(tmp_path)
    # When it is exported to an S3 URI missing a slash
    with pytest.raises(UnsupportedLocationError, match="s3://bucket/prefix"):
        export_table(instance, BulkExportQuery(export_id="e1", table_name="t"), "s3:/bucket/x")
    # Then no local directory of that name was made, and the export was never tracked
    assert not (tmp_path / "s3:").exists()
    assert instance.query_tracker.status("e1") is None
