"""``sleeper query --where`` and ``sleeper sql`` give the same rows on a local instance directory and on an emulated
instance on AWS (this process's moto server), and refuse the same bad input with the same line."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from sleeper.cli.main import run
from sleeper.core.operations import INGEST_JOB_Q, STATE_STORE_COMMITTER_Q
from sleeper.emulator.provision import provision_instance
from sleeper.runtime.aws.instance import AwsInstance, AwsRuntimeConfig
from sleeper.runtime.router import drain
from tests.contract.aws_backends import REGION, aws_settings, moto_endpoint, new_instance_id

pytestmark = [pytest.mark.integration, pytest.mark.aws]

SCHEMA = {
    "rowKeyFields": [{"name": "key", "type": "LongType"}],
    "valueFields": [{"name": "age", "type": "IntType"}, {"name": "name", "type": "StringType"}],
}
ROWS = 200


@pytest.fixture(scope="module")
def aws_config() -> AwsRuntimeConfig:
    return provision_instance(aws_settings(), new_instance_id())


@pytest.fixture(scope="module")
def locations(aws_config: AwsRuntimeConfig, tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[str]]:
    """A local instance and the emulated one on AWS, each with a table ``people`` of the same rows."""
    directory = tmp_path_factory.mktemp("both")
    with pytest.MonkeyPatch.context() as monkeypatch:
        for name in (
            "CONFIG_BUCKET",
            "SLEEPER_INSTANCE_ID",
            "SLEEPER_ACCOUNT",
            "AWS_DEFAULT_REGION",
            "SLEEPER_INSTANCE",
        ):
            monkeypatch.delenv(name, raising=False)
        monkeypatch.setenv("AWS_ENDPOINT_URL", moto_endpoint())
        monkeypatch.setenv("AWS_REGION", REGION)
        monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
        monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
        monkeypatch.chdir(directory)
        (directory / "schema.json").write_text(json.dumps(SCHEMA))
        (directory / "files").mkdir()
        rows = pa.table(
            {
                "key": pa.array(range(ROWS), pa.int64()),
                "age": pa.array([i % 70 for i in range(ROWS)], pa.int32()),
                "name": [f"n{i % 20}" for i in range(ROWS)],
            }
        )
        pq.write_table(rows, directory / "files" / "part.parquet")
        assert run(["--instance", "local", "instance", "create"]) == 0
        both = [str(directory / "local"), f"aws:{AwsInstance(aws_config).instance_id}"]
        for location in both:
            assert run(["--instance", location, "table", "create", "people", "--schema", "schema.json"]) == 0
            assert run(["--instance", location, "ingest", "people", "files"]) == 0
        deployed = AwsInstance(aws_config, table_cache_seconds=0)
        assert drain(deployed, INGEST_JOB_Q) == 1
        drain(deployed, STATE_STORE_COMMITTER_Q)
        yield both


def _on_both(capsys: pytest.CaptureFixture[str], locations: list[str], argv: list[str]) -> list[tuple[int, Any, str]]:
    out = []
    for location in locations:
        capsys.readouterr()
        code = run(["--instance", location, *argv])
        captured = capsys.readouterr()
        out.append((code, json.loads(captured.out) if captured.out.strip() else None, " ".join(captured.err.split())))
    return out


@pytest.mark.parametrize(
    "argv",
    [
        ["query", "people", "--where", "age between 10 and 12 or name = 'n3'", "--format", "json"],
        ["query", "people", "--where", "key in (4, 150) or key >= 198", "--format", "json"],
        [
            "sql",
            "select name, count(*) as n, max(age) as oldest from people where age < 30 group by name order by name",
        ],
        ["sql", "select * from people where name like 'n1%' and key < 50 order by key", "--format", "json"],
        ["sql", "select * from people where age > 1000", "--format", "json"],
    ],
)
def should_give_the_same_rows_on_both_runtimes(
    capsys: pytest.CaptureFixture[str], locations: list[str], argv: list[str]
) -> None:
    if "--format" not in argv:
        argv = [*argv, "--format", "json"]
    local, aws = _on_both(capsys, locations, argv)
    assert local[0] == aws[0] == 0, (local[2], aws[2])
    assert local[1] == aws[1]
    assert local[1]["count"] == len(local[1]["rows"])


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["query", "people", "--where", "agee > 3"], "error: bad filter at position 0: the table has no column 'agee'"),
        (["sql", "drop table people"], "error: SQL here is read-only"),
        (["sql", "select * from nobody"], "error: no table 'nobody' in the instance (tables: people)"),
    ],
)
def should_refuse_alike_on_both_runtimes(
    capsys: pytest.CaptureFixture[str], locations: list[str], argv: list[str], message: str
) -> None:
    local, aws = _on_both(capsys, locations, argv)
    assert local[0] == aws[0] == 1
    assert local[2] == aws[2]
    assert local[2].startswith(message)
