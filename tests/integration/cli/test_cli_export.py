"""``sleeper export TABLE DIR`` on a local instance: one sorted file per leaf, every row once; the same export id
again adds no file; a missing DIR or an unknown table is one line, not a traceback."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from sleeper.cli.main import run
from sleeper.io.filesystem import FileSystemOptions, S3Options, resolve
from sleeper.runtime.local.instance import LocalInstance

pytestmark = pytest.mark.integration

SCHEMA = {
    "rowKeyFields": [{"name": "key", "type": "StringType"}],
    "sortKeyFields": [],
    "valueFields": [{"name": "value", "type": "LongType"}],
}


@pytest.fixture
def instance(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    directory = tmp_path / "instance"
    monkeypatch.setenv("SLEEPER_INSTANCE", str(directory))
    assert run(["instance", "create", "--id", "export-test"]) == 0
    schema = tmp_path / "schema.json"
    schema.write_text(json.dumps(SCHEMA))
    splits = tmp_path / "splits.txt"
    splits.write_text("k-0300\nk-0600\n")
    assert run(["table", "create", "things", "--schema", str(schema), "--split-points", str(splits)]) == 0
    data = tmp_path / "data.parquet"
    keys = [f"k-{i:04d}" for i in reversed(range(900))]
    pq.write_table(pa.table({"key": keys, "value": pa.array(range(900), pa.int64())}), data)
    assert run(["ingest", "things", str(data)]) == 0
    return directory


def _json(capsys: pytest.CaptureFixture[str], argv: list[str]) -> dict[str, object]:
    capsys.readouterr()
    assert run(argv) == 0
    result = json.loads(capsys.readouterr().out)
    assert isinstance(result, dict)
    return result


def should_export_a_table_to_a_directory(instance: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    result = _json(capsys, ["export", "things", str(out), "--export-id", "e1", "--json"])
    files = result["files"]
    assert isinstance(files, list) and len(files) == 3
    assert result["rows"] == 900 and result["state"] == "COMPLETED"
    rows = pa.concat_tables([pq.read_table(f) for f in files])
    assert rows["key"].to_pylist() == [f"k-{i:04d}" for i in range(900)]
    assert all(Path(f).parent == out / str(result["tableId"]) / "e1" for f in files)
    # The same export id again adds nothing
    again = _json(capsys, ["export", "things", str(out), "--export-id", "e1", "--json"])
    assert again["state"] == "ALREADY_FINISHED"
    assert len(list((out / str(result["tableId"]) / "e1").glob("*.parquet"))) == 3


def should_refuse_an_export_without_a_directory_in_one_line(instance: Path, capsys: pytest.CaptureFixture[str]) -> None:
    capsys.readouterr()
    assert run(["export", "things"]) != 0
    err = capsys.readouterr().err
    assert "sleeper export TABLE DIR" in err and "Traceback" not in err


def should_refuse_an_unknown_table_in_one_line(
    instance: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    capsys.readouterr()
    assert run(["export", "nope", str(tmp_path / "o")]) != 0
    err = capsys.readouterr().err
    assert "nope" in err and "Traceback" not in err


@pytest.fixture
def s3_bucket(monkeypatch: pytest.MonkeyPatch) -> tuple[str, FileSystemOptions]:
    """A bucket on this process's moto server, reachable through the standard AWS configuration (as local ingest
    reaches s3:// inputs), and the S3 options the local instance then has."""
    import uuid

    import boto3

    from tests.contract.aws_backends import REGION, moto_endpoint

    for name, value in {
        "AWS_ENDPOINT_URL": moto_endpoint(),
        "AWS_REGION": REGION,
        "AWS_DEFAULT_REGION": REGION,
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
    }.items():
        monkeypatch.setenv(name, value)
    bucket = f"export-{uuid.uuid4().hex[:12]}"
    boto3.client("s3").create_bucket(Bucket=bucket, CreateBucketConfiguration={"LocationConstraint": REGION})
    # pyarrow's S3 client ignores AWS_ENDPOINT_URL: the local instance's S3 options name the moto server instead
    options = FileSystemOptions(
        s3=S3Options(endpoint_override=moto_endpoint(), region=REGION, access_key="testing", secret_key="testing")
    )
    monkeypatch.setattr(LocalInstance, "filesystem_options", property(lambda _self: options))
    return bucket, options


@pytest.mark.aws
def should_export_a_local_table_to_s3_as_local_ingest_reads_it(
    instance: Path,
    tmp_path: Path,
    s3_bucket: tuple[str, FileSystemOptions],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    bucket, options = s3_bucket
    # When a local table is exported to an S3 URI, from a working directory of its own
    monkeypatch.chdir(tmp_path)
    before = sorted(p.name for p in tmp_path.iterdir())
    result = _json(capsys, ["export", "things", f"s3://{bucket}/exports", "--export-id", "e1", "--json"])
    # Then the files are in the bucket, holding every row once, and nothing was written locally
    files = result["files"]
    assert isinstance(files, list) and len(files) == 3
    assert all(f.startswith(f"s3://{bucket}/exports/{result['tableId']}/e1/") for f in files)
    s3, _ = resolve(f"s3://{bucket}", options)
    rows = pa.concat_tables([pq.read_table(f.removeprefix("s3://"), filesystem=s3) for f in files])
    assert rows["key"].to_pylist() == [f"k-{i:04d}" for i in range(900)]
    assert sorted(p.name for p in tmp_path.iterdir()) == before


@pytest.mark.parametrize(
    ("target", "reason"),
    [
        ("gs://bucket/x", "scheme 'gs'"),
        ("s3:/bucket/x", "s3://"),
        ("s3://", "no bucket"),
    ],
)
def should_refuse_an_export_location_it_cannot_write_naming_why(
    instance: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    target: str,
    reason: str,
) -> None:
    # When a local table is exported to a location that is neither a local path nor an S3 URI
    monkeypatch.chdir(tmp_path)
    before = sorted(p.name for p in tmp_path.iterdir())
    capsys.readouterr()
    code = run(["export", "things", target, "--export-id", "e1"])
    # Then the command fails with one line naming the location and why, and writes nothing
    assert code == 1
    err = capsys.readouterr().err
    assert target in err and reason in err
    assert sorted(p.name for p in tmp_path.iterdir()) == before
