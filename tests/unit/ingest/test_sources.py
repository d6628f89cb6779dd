"""Where ingest jobs may read from (sleeper.ingest.sources): the rule the ingest job runner applies before any read."""

from __future__ import annotations

import pytest

from sleeper.ingest.sources import IngestSourceNotAllowedError, IngestSources

DATA = "sleeper-x-table-data-1"
TABLES = {"0a1b2c3d"}


def _is_table(name: str) -> bool:
    return name in TABLES


AWS = IngestSources.for_aws_instance(DATA, ["source-a", " source-b ", ""])


@pytest.mark.parametrize(
    "path",
    [
        f"{DATA}/for_ingest/job.parquet",
        f"s3://{DATA}/for_ingest/dir",
        f"s3a://{DATA}/staging/rows.parquet",
        "source-a/any/key.parquet",
        "s3://source-b/x.parquet",
        "s3a://source-b",
    ],
)
def should_allow_the_data_bucket_outside_the_tables_and_the_listed_buckets(path: str) -> None:
    AWS.check(path, _is_table)
    assert AWS.problems([path], _is_table) == []


@pytest.mark.parametrize(
    ("path", "reason"),
    [
        ("other-bucket/file.parquet", "add the bucket to sleeper.ingest.source.bucket"),
        ("s3://sleeper-x-config-1/instance.properties", "add the bucket to sleeper.ingest.source.bucket"),
        (f"{DATA}/0a1b2c3d/data/partition_root/f.parquet", "may not read table data files"),
        (f"s3a://{DATA}/0a1b2c3d", "may not read table data files"),
        (f"s3a://{DATA}", "may not read table data files or the whole data bucket"),
        ("/etc/passwd", "local paths cannot be ingested"),
        ("file:///tmp/rows.parquet", "local paths cannot be ingested"),
    ],
)
def should_refuse_anywhere_else_on_aws_naming_the_path(path: str, reason: str) -> None:
    with pytest.raises(IngestSourceNotAllowedError, match=reason) as refused:
        AWS.check(path, _is_table)
    assert refused.value.path == path
    assert path in str(refused.value)
    assert f"s3://{DATA}/for_ingest/" in str(refused.value)


def should_list_one_reason_per_refused_path() -> None:
    paths = [f"{DATA}/for_ingest/a.parquet", "elsewhere/b.parquet", "/c.parquet"]
    problems = AWS.problems(paths, _is_table)
    assert [p.split(":")[0] for p in problems] == ["elsewhere/b.parquet", "/c.parquet"]


def should_allow_anything_on_a_local_instance() -> None:
    local = IngestSources.anywhere()
    for path in ("/etc/passwd", "other-bucket/x.parquet", f"{DATA}/0a1b2c3d/data/f.parquet"):
        local.check(path, _is_table)
