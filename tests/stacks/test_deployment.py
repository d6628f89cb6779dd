"""Deploying as Sleeper's users do: the CDK context of Sleeper 0.36.1, a configuration directory's tables deployed
with the instance, an unknown context name refused, and ``python -m sleeper.cdk.app`` writing ``cdk.out/``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("aws_cdk")

import aws_cdk as cdk  # noqa: E402

from sleeper.cdk import app as sleeper_app  # noqa: E402
from sleeper.cdk.instance import SleeperInstanceStack  # noqa: E402
from sleeper.core.deploy.context import DeployContextError  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = {"rowKeyFields": [{"name": "key", "type": "StringType"}], "valueFields": [{"name": "v", "type": "LongType"}]}


def _configuration(directory: Path) -> Path:
    (directory / "instance.properties").write_text("sleeper.id=confdir\nsleeper.optional.stacks=\n", "utf-8")
    (directory / "tags.properties").write_text("costcentre=42\n", encoding="utf-8")
    table = directory / "tables" / "events"
    table.mkdir(parents=True)
    (table / "table.properties").write_text(
        "sleeper.table.name=events\nsleeper.table.parquet.compression.codec=snappy\n", encoding="utf-8"
    )
    (table / "schema.json").write_text(json.dumps(SCHEMA), encoding="utf-8")
    (table / "splits.txt").write_text("m\nt\n", encoding="utf-8")
    return directory


def _resources(stack: cdk.Stack, kind: str) -> list[dict[str, Any]]:
    template = cdk.assertions.Template.from_stack(stack).to_json()
    return [r for r in template["Resources"].values() if r["Type"] == kind]


@pytest.fixture(scope="module")
def from_directory(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[cdk.App, SleeperInstanceStack]]:
    directory = _configuration(tmp_path_factory.mktemp("configuration"))
    outdir = tmp_path_factory.mktemp("out")
    context = {"configurationDir": str(directory), "artefacts": "ecr", "deployPaused": "true", "nag": "true"}
    app = cdk.App(analytics_reporting=False, outdir=str(outdir), context=context)
    stack = sleeper_app.build(app)
    app.synth()
    yield app, stack


@pytest.mark.slow
def should_deploy_the_tables_of_a_configuration_directory(from_directory: Any) -> None:
    # Given the instance synthesized with -c configurationDir=DIR
    _, stack = from_directory

    # When the table definer's resource is read
    (resource,) = _resources(stack.parts["TableDefiner"], "Custom::SleeperTables")
    tables = json.loads(resource["Properties"]["Tables"])

    # Then it carries the table's name, schema, properties and split points
    assert stack.stack_name == "confdir"
    assert tables == [
        {
            "name": "events",
            "schema": json.dumps(SCHEMA),
            "properties": {"sleeper.table.parquet.compression.codec": "snappy"},
            "splitPoints": ["m", "t"],
        }
    ]
    # And it runs after instance.properties is written, which the table definer reads
    assert stack.properties_writer in stack.parts["TableDefiner"].node.dependencies


@pytest.mark.slow
def should_deploy_paused_with_every_scheduled_rule_disabled(from_directory: Any) -> None:
    # Given -c deployPaused=true
    _, stack = from_directory

    # When the rules of the state store upkeep are read
    rules = _resources(stack.parts["StateStoreUpkeep"], "AWS::Events::Rule")

    # Then none is enabled
    assert len(rules) == 3
    assert {r["Properties"]["State"] for r in rules} == {"DISABLED"}


@pytest.mark.slow
def should_pass_cdk_nag_in_a_synthesis_that_asks_for_it(from_directory: Any) -> None:
    # Given -c nag=true, with which the fixture's synthesis succeeded
    app, _ = from_directory

    # Then the policy validation ran and reported nothing unacknowledged
    report = json.loads((Path(app.outdir) / "validation-report.json").read_text(encoding="utf-8"))
    assert report["pluginReports"] == []


def should_fail_a_synthesis_with_an_unacknowledged_cdk_nag_finding(tmp_path: Path) -> None:
    # Given an app checked as -c nag=true checks it, holding a bucket with no access logs or TLS rule
    from aws_cdk import aws_s3 as s3

    from sleeper.cdk.nag import run_checks

    app = cdk.App(analytics_reporting=False, outdir=str(tmp_path))
    s3.Bucket(cdk.Stack(app, "Bad"), "Bucket")
    run_checks(app)

    # When / Then
    with pytest.raises(RuntimeError, match="AwsSolutions-S1"):
        app.synth()


def should_refuse_an_unknown_context_name_naming_it() -> None:
    # Given a misspelt propertiesFile, which once fell back to the example instance
    app = cdk.App(context={"propertiesFiel": "instance.properties"})

    # When / Then
    with pytest.raises(DeployContextError, match="unknown CDK context variable 'propertiesFiel'"):
        sleeper_app.build(app)


def should_refuse_no_configuration() -> None:
    # When / Then
    with pytest.raises(DeployContextError, match="set the 'configurationDir' or 'propertiesFile'"):
        sleeper_app.build(cdk.App(context={"artefacts": "ecr"}))


def should_accept_the_old_lower_case_properties_file_name(tmp_path: Path) -> None:
    # Given
    path = tmp_path / "instance.properties"
    path.write_text("sleeper.id=old\n", encoding="utf-8")

    # When
    properties = sleeper_app.load_properties(cdk.App(context={"propertiesfile": str(path), "vpc": "vpc-9"}))

    # Then
    assert properties.get("sleeper.id") == "old"
    assert properties.get("sleeper.vpc") == "vpc-9"


def should_skip_validation_when_told(tmp_path: Path) -> None:
    # Given properties that are invalid (as they may be when destroying an instance)
    path = tmp_path / "instance.properties"
    path.write_text("sleeper.id=gone\nsleeper.retain.infra.after.destroy=maybe\n", encoding="utf-8")

    # When / Then
    with pytest.raises(ValueError, match="retain.infra"):
        sleeper_app.load_properties(cdk.App(context={"propertiesFile": str(path)}))
    assert sleeper_app.load_properties(cdk.App(context={"propertiesFile": str(path), "validate": "false"}))


@pytest.mark.aws
def should_refuse_a_new_instance_whose_config_bucket_exists(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Given an instance whose config bucket already exists in the account
    moto = pytest.importorskip("moto")
    for name, value in (("AWS_ACCESS_KEY_ID", "testing"), ("AWS_SECRET_ACCESS_KEY", "testing")):
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("CDK_DEFAULT_ACCOUNT", "123456789012")
    monkeypatch.setenv("CDK_DEFAULT_REGION", "eu-west-2")
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)
    path = tmp_path / "instance.properties"
    path.write_text("sleeper.id=taken\n", encoding="utf-8")
    with moto.mock_aws():
        assert not sleeper_app.instance_exists("taken", "123456789012", "eu-west-2")
        import boto3

        boto3.client("s3", region_name="eu-west-2").create_bucket(
            Bucket="sleeper-taken-config-123456789012",
            CreateBucketConfiguration={"LocationConstraint": "eu-west-2"},
        )
        app = cdk.App(context={"propertiesFile": str(path), "newInstance": "true", "artefacts": "ecr"})

        # When / Then
        with pytest.raises(DeployContextError, match="instance 'taken' already exists"):
            sleeper_app.build(app)


def _run_app(cwd: Path, context: dict[str, str], *, as_arguments: bool = False) -> subprocess.CompletedProcess[str]:
    """Runs the app (``python -m sleeper.cdk.app``) as the cdk command runs it (context in CDK_CONTEXT_JSON) or as a
    user does (-c arguments)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CDK_", "AWS_"))}
    env["PYTHONPATH"] = str(ROOT)
    arguments = []
    if as_arguments:
        arguments = [a for name, value in context.items() for a in ("-c", f"{name}={value}")]
    else:
        env["CDK_CONTEXT_JSON"] = json.dumps(context)
    return subprocess.run(
        [sys.executable, "-m", "sleeper.cdk.app", *arguments], cwd=cwd, env=env, capture_output=True, text=True,
        timeout=600,
    )  # fmt: skip


def should_fail_in_one_line_naming_an_unknown_context_name(tmp_path: Path) -> None:
    # When the app runs as the cdk command runs it, with a misspelt name
    result = _run_app(tmp_path, {"configurationDirectory": str(tmp_path)})

    # Then
    assert result.returncode == 1
    assert (
        result.stderr.strip()
        .splitlines()[-1]
        .startswith("sleeper cdk app: unknown CDK context variable 'configurationDirectory'")
    )
    assert "Traceback" not in result.stderr
    assert not (tmp_path / "cdk.out").exists()


@pytest.mark.slow
def should_write_cdk_out_when_run_as_a_python_module(tmp_path: Path) -> None:
    # Given an instance properties file
    path = tmp_path / "instance.properties"
    path.write_text("sleeper.id=mine\nsleeper.optional.stacks=\n", encoding="utf-8")

    # When the app runs as python -m sleeper.cdk.app -c propertiesFile=FILE
    result = _run_app(tmp_path, {"propertiesFile": str(path), "artefacts": "ecr"}, as_arguments=True)

    # Then that instance is synthesized into cdk.out/ of the working directory
    assert result.returncode == 0, result.stderr
    template = json.loads((tmp_path / "cdk.out" / "mine.template.json").read_text(encoding="utf-8"))
    assert template["Description"] == "Sleeper instance mine"
