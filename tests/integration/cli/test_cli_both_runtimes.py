"""The ``sleeper`` command is one shell over the one instance API: every command, with the same arguments (local
relative paths included), on a local instance directory and on an emulated instance on AWS (this process's moto
server), gives the same answer; where a verb is one only a local instance can do, the instance on AWS refuses it with
an error saying so.

What differs by design is where work runs: an ingest job sent to an instance on AWS is run here by draining its
queue through the AWS runtime's own entries (as the deployed ingest tasks and committer would), before the rows are
compared.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from sleeper.adapters.aws import sqs_queue
from sleeper.adapters.aws.clients import events_client
from sleeper.cli.main import run
from sleeper.core.operations import INGEST_JOB_Q, STATE_STORE_COMMITTER_Q
from sleeper.emulator.provision import provision_instance
from sleeper.runtime.aws.api import scheduled_rule_names
from sleeper.runtime.aws.instance import AwsInstance, AwsRuntimeConfig
from sleeper.runtime.router import drain
from tests.contract.aws_backends import REGION, aws_settings, moto_endpoint, new_instance_id

pytestmark = [pytest.mark.integration, pytest.mark.aws]

SCHEMA = {
    "rowKeyFields": [{"name": "key", "type": "LongType"}],
    "sortKeyFields": [],
    "valueFields": [{"name": "value", "type": "StringType"}],
}
ROWS = 100
LOCAL_ONLY = "works only on a local instance directory, not on an instance on AWS"


@pytest.fixture(scope="module")
def aws_config() -> AwsRuntimeConfig:
    """An emulated instance as a deployment leaves it: every queue, and its scheduled rules enabled."""
    settings = aws_settings()
    config = provision_instance(settings, new_instance_id())
    instance_id = AwsInstance(config).instance_id
    for rule in scheduled_rule_names(instance_id):
        events_client(settings).put_rule(Name=rule, ScheduleExpression="rate(1 minute)", State="ENABLED")
    return config


@pytest.fixture
def locations(
    aws_config: AwsRuntimeConfig, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[dict[str, str]]:
    """The two instances as ``--instance`` names them, with the working directory holding ``schema.json`` and
    ``files/part.parquet`` (named by relative paths on both)."""
    for name in ("CONFIG_BUCKET", "SLEEPER_INSTANCE_ID", "SLEEPER_ACCOUNT", "AWS_DEFAULT_REGION", "SLEEPER_INSTANCE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_ENDPOINT_URL", moto_endpoint())
    monkeypatch.setenv("AWS_REGION", REGION)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.chdir(tmp_path)
    (tmp_path / "schema.json").write_text(json.dumps(SCHEMA))
    (tmp_path / "files").mkdir()
    rows = pa.table({"key": pa.array(range(ROWS), pa.int64()), "value": [f"v{i}" for i in range(ROWS)]})
    pq.write_table(rows, tmp_path / "files" / "part.parquet")
    assert run(["--instance", "local", "instance", "create"]) == 0
    yield {"local": "local", "aws": f"aws:{AwsInstance(aws_config).instance_id}"}


def _on_both(capsys: pytest.CaptureFixture[str], locations: dict[str, str], argv: list[str]) -> dict[str, Any]:
    """Runs one command on both instances: each runtime's (exit code, JSON on stdout or None, stderr in one line)."""
    out: dict[str, Any] = {}
    for runtime, location in locations.items():
        capsys.readouterr()
        code = run(["--instance", location, *argv])
        captured = capsys.readouterr()
        try:
            data = json.loads(captured.out) if captured.out.strip() else None
        except json.JSONDecodeError:
            data = captured.out
        out[runtime] = (code, data, " ".join(captured.err.split()))
    return out


def _same(capsys: pytest.CaptureFixture[str], locations: dict[str, str], argv: list[str]) -> tuple[Any, Any]:
    """Runs a command that both runtimes do: both succeed; returns their JSON (local, aws)."""
    both = _on_both(capsys, locations, argv)
    assert both["local"][0] == 0, both["local"][2]
    assert both["aws"][0] == 0, both["aws"][2]
    return both["local"][1], both["aws"][1]


def _local_only(capsys: pytest.CaptureFixture[str], locations: dict[str, str], argv: list[str]) -> None:
    """Runs a command only a local instance can do: the instance on AWS refuses it, saying so, and changes nothing."""
    both = _on_both(capsys, locations, argv)
    assert both["local"][0] == 0, both["local"][2]
    code, data, err = both["aws"]
    assert code == 1
    assert data is None
    assert LOCAL_ONLY in err, err


def _tables(listing: list[dict[str, Any]]) -> list[tuple[str, bool, int]]:
    return [(t["tableName"], t["online"], t["rows"]) for t in listing]


def should_answer_every_command_alike_on_a_local_instance_and_on_aws(
    capsys: pytest.CaptureFixture[str],
    locations: dict[str, str],
    aws_config: AwsRuntimeConfig,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A redrive long-polls each dead-letter queue for a second before it finds it empty (SQS's short poll may miss
    # messages); moto's short poll never does, so the retry below does not wait a second per queue.
    monkeypatch.setattr(sqs_queue, "_REDRIVE_WAIT_SECONDS", 0)
    # Given a table made with the same command on both
    local, aws = _same(capsys, locations, ["table", "create", "people", "--schema", "schema.json", "--json"])
    assert (local["tableName"], local["leafPartitions"]) == (aws["tableName"], aws["leafPartitions"]) == ("people", 1)
    local, aws = _same(capsys, locations, ["table", "list", "--json"])
    assert _tables(local) == _tables(aws) == [("people", True, 0)]

    # When the same relative local path is ingested: run here locally, staged and sent on AWS (then run by its tasks)
    local, aws = _same(capsys, locations, ["ingest", "people", "files", "--json"])
    assert (local["status"], local["rowsRead"], local["rowsWritten"]) == ("FINISHED", ROWS, ROWS)
    assert (aws["status"], aws["tableName"]) == ("SENT", "people")
    deployed = AwsInstance(aws_config, table_cache_seconds=0)
    assert drain(deployed, INGEST_JOB_Q) == 1
    drain(deployed, STATE_STORE_COMMITTER_Q)

    # Then both hold the same rows, read through the same query command
    local, aws = _same(capsys, locations, ["table", "list", "--json"])
    assert _tables(local) == _tables(aws) == [("people", True, ROWS)]
    local, aws = _same(capsys, locations, ["query", "people", "--format", "json", "--limit", "5"])
    assert local == aws
    assert [row["key"] for row in local["rows"]] == [0, 1, 2, 3, 4]
    local, aws = _same(capsys, locations, ["query", "people", "--range", "key=[10,13)", "--format", "json"])
    assert local == aws == {"rows": [{"key": k, "value": f"v{k}"} for k in (10, 11, 12)], "count": 3}
    local, aws = _same(capsys, locations, ["report", "partitions", "people", "--json"])
    assert len(local) == len(aws) == 1

    # And the operations run now (here locally, by the deployed functions on AWS) are accepted by both
    for argv in (["compact", "people", "--json"], ["split", "people", "--json"], ["gc", "people", "--json"]):
        _same(capsys, locations, argv)
    local, aws = _same(capsys, locations, ["pause", "--json"])
    assert local["paused"] is aws["paused"] is True
    local, aws = _same(capsys, locations, ["resume", "--json"])
    assert local["paused"] is aws["paused"] is False
    local, aws = _same(capsys, locations, ["dead-letters", "retry", "--json"])
    assert local == aws
    local, aws = _same(capsys, locations, ["report", "status", "--json"])
    assert [t["tableName"] for t in local["tables"]] == [t["tableName"] for t in aws["tables"]] == ["people"]
    assert "directory" in local and "configBucket" in aws

    # And what only a local instance can do is refused on AWS with an error saying so
    _local_only(capsys, locations, ["gc", "people", "--orphans", "--dry-run", "--json"])
    _local_only(capsys, locations, ["run", "--until-idle"])
    both = _on_both(capsys, locations, ["export", "people", "out", "--json"])
    assert both["local"][0] == 0 and both["local"][1]["rows"] == ROWS
    assert both["aws"][0] == 1 and "leave out DIR" in both["aws"][2]
    both = _on_both(capsys, locations, ["bulk-import", "people", "files", "--platform", "emr", "--json"])
    assert both["local"][0] == both["aws"][0] == 1
    assert (
        both["local"][2] == both["aws"][2] == "error: --platform chooses the queue a job is sent to: give --queue too"
    )
    local, aws = _same(capsys, locations, ["bulk-import", "people", "files", "--queue", "--json"])
    assert local["status"] == aws["status"] == "SENT"

    # And the table verbs are the same on both
    _same(capsys, locations, ["table", "rename", "people", "folk", "--json"])
    _same(capsys, locations, ["table", "offline", "folk", "--json"])
    local, aws = _same(capsys, locations, ["table", "list", "--json"])
    assert _tables(local) == _tables(aws) == [("folk", False, ROWS)]
    _same(capsys, locations, ["table", "online", "folk", "--json"])
    _same(capsys, locations, ["table", "reinit", "folk", "--yes", "--json"])
    local, aws = _same(capsys, locations, ["table", "list", "--json"])
    assert _tables(local) == _tables(aws) == [("folk", True, 0)]
    _same(capsys, locations, ["table", "delete", "folk", "--yes", "--json"])
    local, aws = _same(capsys, locations, ["table", "list", "--json"])
    assert local == aws == []
