"""Beyond Sleeper: an instance whose default state store and configuration tables are all
S3TransactionLogStateStore deploys no DynamoDB transaction log or snapshot tables, grants nothing on them and has no
follower of their stream; the default instance still has them."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("aws_cdk")

import aws_cdk as cdk  # noqa: E402
from aws_cdk.assertions import Template  # noqa: E402

from sleeper.cdk import app as sleeper_app  # noqa: E402
from sleeper.core import naming  # noqa: E402
from sleeper.core.deploy.configuration import TableConfiguration  # noqa: E402
from sleeper.core.deploy.plan import deploys_dynamodb_state_store, planned_stacks  # noqa: E402
from sleeper.core.exceptions import PropertyError  # noqa: E402
from sleeper.core.properties import InstanceProperties  # noqa: E402
from sleeper.statestore.object_log import DELETED_TABLES_PREFIX  # noqa: E402

pytestmark = pytest.mark.slow

SCHEMA = {"rowKeyFields": [{"name": "key", "type": "StringType"}], "valueFields": [{"name": "v", "type": "LongType"}]}
S3_STORE = "S3TransactionLogStateStore"
LOG_SUFFIXES = (naming.FILES_LOG, naming.PARTITIONS_LOG, naming.LATEST_SNAPSHOTS, naming.ALL_SNAPSHOTS)
LOG_CONSTRUCTS = ("FilesLog", "PartitionsLog", "LatestSnapshots", "AllSnapshots")
"""The construct ids of the log and snapshot tables, which every reference to them from another stack names."""
FILES_LOG_PROPERTY = "sleeper.statestore.transactionlog.dynamo.file.log.table"


def _table(name: str, **properties: str) -> TableConfiguration:
    return TableConfiguration(name=name, schema_json=json.dumps(SCHEMA), properties=dict(properties))


def _instance(**properties: str) -> InstanceProperties:
    return InstanceProperties({"sleeper.id": "plan", **properties})


def should_deploy_the_dynamodb_logs_unless_the_default_and_every_table_use_the_s3_store() -> None:
    s3_default = _instance(**{"sleeper.default.table.statestore.classname": S3_STORE})
    # When the default is Sleeper's, or a table of the configuration asks for a DynamoDB store, the logs are deployed
    assert deploys_dynamodb_state_store(_instance(), [_table("a", **{"sleeper.table.statestore.classname": S3_STORE})])
    assert deploys_dynamodb_state_store(
        s3_default,
        [_table("a"), _table("b", **{"sleeper.table.statestore.classname": "DynamoDBTransactionLogStateStore"})],
    )
    # When the default and every table use the S3 store (unset, or named in Sleeper's way), they are not planned
    assert not deploys_dynamodb_state_store(
        s3_default, [_table("a"), _table("b", **{"sleeper.table.statestore.classname": S3_STORE})]
    )
    assert "StateStore" not in [p.name for p in planned_stacks(s3_default, [_table("a")])]
    assert "StateStore" in [p.name for p in planned_stacks(_instance())]
    # And a default naming no state store is refused, naming the value
    with pytest.raises(PropertyError, match="'Nope' is not a state store"):
        deploys_dynamodb_state_store(_instance(**{"sleeper.default.table.statestore.classname": "Nope"}))


def _configuration(directory: Path) -> Path:
    (directory / "instance.properties").write_text(
        "sleeper.id=s3only\n"
        "sleeper.optional.stacks=CompactionStack,GarbageCollectorStack,PartitionSplittingStack,QueryStack\n"
        f"sleeper.default.table.statestore.classname={S3_STORE}\n",
        encoding="utf-8",
    )
    table = directory / "tables" / "events"
    table.mkdir(parents=True)
    (table / "table.properties").write_text("sleeper.table.name=events\n", encoding="utf-8")
    (table / "schema.json").write_text(json.dumps(SCHEMA), encoding="utf-8")
    return directory


@pytest.fixture(scope="module")
def s3_only(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, dict[str, Any]]]:
    directory = _configuration(tmp_path_factory.mktemp("configuration"))
    app = cdk.App(
        analytics_reporting=False,
        outdir=str(tmp_path_factory.mktemp("out")),
        context={"configurationDir": str(directory), "artefacts": "ecr"},
    )
    stack = sleeper_app.build(app)
    app.synth()
    found = {"Instance": Template.from_stack(stack).to_json()}
    found.update({name: Template.from_stack(nested).to_json() for name, nested in stack.parts.items()})
    yield found


def _resources(templates: dict[str, dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [r["Properties"] for t in templates.values() for r in t.get("Resources", {}).values() if r["Type"] == kind]


def _policy_text(templates: dict[str, dict[str, Any]]) -> str:
    return json.dumps([_resources(templates, kind) for kind in ("AWS::IAM::Policy", "AWS::IAM::ManagedPolicy")])


def should_deploy_no_dynamodb_log_or_grants_on_one_when_every_table_uses_the_s3_store(
    s3_only: dict[str, dict[str, Any]],
) -> None:
    # When the instance whose default and only table use the S3 store is synthesized
    tables = [str(t["TableName"]) for t in _resources(s3_only, "AWS::DynamoDB::Table")]
    functions = [str(f.get("FunctionName", "")) for f in _resources(s3_only, "AWS::Lambda::Function")]
    everything = json.dumps(s3_only)
    # Then it has no log or snapshot table, and its other tables are there
    assert "StateStore" not in s3_only
    assert not [t for t in tables if t.endswith(LOG_SUFFIXES)], tables
    assert any(t.endswith("table-index-by-name") for t in tables), tables
    # And no policy, stream mapping or property names them, and there is no follower
    assert not [c for c in LOG_CONSTRUCTS if c in everything]
    assert not [s for s in LOG_SUFFIXES if s in everything]
    assert "StreamArn" not in everything
    assert not [f for f in functions if f.endswith("state-transaction-follower")]
    assert FILES_LOG_PROPERTY not in everything
    # And the upkeep and the functions committing to a table's state are still deployed, reading the state in S3
    for suffix in ("state-snapshot-creation", "state-transaction-deletion", "statestore-committer"):
        assert [f for f in functions if f.endswith(suffix)], suffix
    assert f"{DELETED_TABLES_PREFIX}*" in _policy_text(s3_only)


def should_keep_the_dynamodb_logs_and_their_grants_on_the_default_instance(synthesized: Any) -> None:
    # When the example instance (Sleeper's default state store) is synthesized
    templates = {name: synthesized.json(name) for name in synthesized.templates}
    tables = [str(t["TableName"]) for t in _resources(templates, "AWS::DynamoDB::Table")]
    policies = _policy_text(templates)
    functions = [str(f.get("FunctionName", "")) for f in _resources(templates, "AWS::Lambda::Function")]
    # Then its four log and snapshot tables are there, policies name each, and the follower reads the stream
    assert sorted(t for t in tables if t.endswith(LOG_SUFFIXES)) == sorted(
        naming.table_name("example", s) for s in LOG_SUFFIXES
    )
    assert all(c in policies for c in LOG_CONSTRUCTS), [c for c in LOG_CONSTRUCTS if c not in policies]
    assert [f for f in functions if f.endswith("state-transaction-follower")]
