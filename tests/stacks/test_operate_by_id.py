"""Operating a deployed instance by its id, against moto (no Docker, no AWS account): ``sleeper deploy --instance-id``
redeploys from the properties in the config bucket (and the saved configuration synthesizes), ``sleeper teardown ID``
stops the instance's processes, deletes its stack and removes its own artefacts (data kept or not as the retain
properties say), and ``sleeper artefacts`` creates the artefacts bucket and repositories and pushes the images (Docker
faked) or, without Docker, says what it would upload where."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("aws_cdk")
moto = pytest.importorskip("moto")

import aws_cdk as cdk  # noqa: E402
import boto3  # noqa: E402

from sleeper.cdk import app as sleeper_app  # noqa: E402
from sleeper.cli import deploy as deploy_cli  # noqa: E402
from sleeper.cli.main import run  # noqa: E402
from sleeper.core import naming  # noqa: E402
from sleeper.core.exceptions import SleeperError  # noqa: E402
from sleeper.core.properties import javaprops  # noqa: E402
from sleeper.runtime.aws.api import scheduled_rule_names  # noqa: E402

REGION = "eu-west-2"
ACCOUNT = "123456789012"


@pytest.fixture
def aws(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for name in ("AWS_ENDPOINT_URL", "AWS_PROFILE", "AWS_DEFAULT_PROFILE", "SLEEPER_ACCOUNT", "CDK_DEFAULT_ACCOUNT"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_REGION", REGION)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    with moto.mock_aws():
        yield


def _client(service: str) -> Any:
    return boto3.client(service, region_name=REGION)


def _bucket(name: str) -> None:
    _client("s3").create_bucket(Bucket=name, CreateBucketConfiguration={"LocationConstraint": REGION})


def _buckets() -> set[str]:
    return {b["Name"] for b in _client("s3").list_buckets()["Buckets"]}


def _deployed(instance_id: str, **values: str) -> dict[str, str]:
    """An instance as the deployment leaves it: its properties (with values the deployment set) in its config bucket,
    its stack, a scheduled rule enabled."""
    config = naming.config_bucket_name(instance_id, ACCOUNT)
    properties = {"sleeper.id": instance_id, "sleeper.optional.stacks": "QueryStack",
                  "sleeper.config.bucket": config, "sleeper.account": ACCOUNT, "sleeper.region": REGION,
                  "sleeper.query.queue.url": f"https://sqs.{REGION}.amazonaws.com/{ACCOUNT}/sleeper-{instance_id}-QueryQ",
                  **values}  # fmt: skip
    _bucket(config)
    _client("s3").put_object(Bucket=config, Key="instance.properties", Body=javaprops.dump(properties))
    template = {"Resources": {"Topic": {"Type": "AWS::SNS::Topic", "Properties": {"TopicName": f"{instance_id}-t"}}}}
    _client("cloudformation").create_stack(StackName=instance_id, TemplateBody=json.dumps(template))
    _client("events").put_rule(Name=scheduled_rule_names(instance_id)[0], ScheduleExpression="rate(1 minute)",
                               State="ENABLED")  # fmt: skip
    return properties


def _own_artefacts(deployment_id: str) -> None:
    bucket = f"sleeper-{deployment_id}-jars"
    _bucket(bucket)
    _client("s3").put_object(Bucket=bucket, Key="iterators-1.0-py3-none-any.whl", Body=b"wheel")
    for image in ("lambda", "compaction"):
        _client("ecr").create_repository(repositoryName=f"{deployment_id}/{image}")


def _repositories() -> set[str]:
    return {r["repositoryName"] for r in _client("ecr").describe_repositories()["repositories"]}


def _stack_names() -> set[str]:
    stacks = _client("cloudformation").list_stacks()["StackSummaries"]
    return {s["StackName"] for s in stacks if s["StackStatus"] != "DELETE_COMPLETE"}


@pytest.mark.usefixtures("aws")
def should_redeploy_from_the_properties_in_the_config_bucket(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given an instance deployed with the query stack, its properties in its config bucket
    saved = _deployed("redeploy")
    # When it is redeployed by id (a dry run: no cdk here)
    status = run(["deploy", "--instance-id", "redeploy", "--save-to", str(tmp_path / "saved"), "--dry-run"])
    # Then its properties are saved, and the plan and the cdk command are those of that configuration
    out = capsys.readouterr().out
    assert status == 0
    written = javaprops.load((tmp_path / "saved" / "instance.properties").read_text(encoding="utf-8"))
    assert written == saved
    assert "Deploying instance redeploy" in out and "  Query: " in out
    assert f"-c configurationDir={(tmp_path / 'saved').resolve()}" in out
    # And the saved configuration synthesizes, the values the deployment set left for it to set again
    app = cdk.App(analytics_reporting=False, outdir=str(tmp_path / "cdk.out"),
                  context={"configurationDir": str(tmp_path / "saved"), "artefacts": "ecr"})  # fmt: skip
    stack = sleeper_app.build(app)
    app.synth()
    assert "Query" in stack.parts and stack.stack_name == "redeploy"


@pytest.mark.usefixtures("aws")
def should_refuse_to_redeploy_an_instance_that_is_not_deployed(capsys: pytest.CaptureFixture[str]) -> None:
    # When an instance with no config bucket is redeployed by id
    status = run(["deploy", "--instance-id", "nowhere", "--dry-run"])
    # Then it is refused in one line naming the bucket
    err = capsys.readouterr().err.strip()
    assert status != 0
    (line,) = err.splitlines()
    assert "instance 'nowhere' is not deployed" in line and f"sleeper-nowhere-config-{ACCOUNT}" in line


@pytest.mark.usefixtures("aws")
def should_refuse_a_deploy_with_both_or_neither_configuration_and_id(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # When / Then
    assert run(["deploy", "--dry-run"]) != 0
    assert run(["deploy", str(tmp_path), "--instance-id", "x", "--dry-run"]) != 0
    assert "give a configuration directory, or --instance-id ID" in capsys.readouterr().err


@pytest.mark.usefixtures("aws")
def should_tear_down_everything_and_remove_the_data_when_not_retained(capsys: pytest.CaptureFixture[str]) -> None:
    # Given an instance whose data is not retained, with its own artefacts
    _deployed("gone", **{"sleeper.retain.infra.after.destroy": "false"})
    _own_artefacts("gone")
    # When it is torn down by id
    status = run(["teardown", "gone", "--force"])
    # Then its rules are disabled, its stack deleted and its artefacts removed
    out = capsys.readouterr().out
    assert status == 0, out
    rule = _client("events").describe_rule(Name=scheduled_rule_names("gone")[0])
    assert rule["State"] == "DISABLED"
    assert "gone" not in _stack_names()
    assert _repositories() == set()
    assert "sleeper-gone-jars" not in _buckets()
    # And it said the buckets and tables go with the stack
    assert "and the DynamoDB tables: deleted with the stack (sleeper.retain.infra.after.destroy=false)" in out
    assert "Torn down instance gone" in out


@pytest.mark.usefixtures("aws")
def should_keep_retained_data_and_shared_artefacts(capsys: pytest.CaptureFixture[str]) -> None:
    # Given an instance retaining its data (the default), its artefacts a deployment shared with others
    _deployed("kept", **{"sleeper.artefacts.deployment": "shared"})
    _own_artefacts("shared")
    # When it is torn down by id
    status = run(["teardown", "kept", "--force"])
    # Then its stack is deleted, its config bucket (retained) and the shared artefacts are left
    out = capsys.readouterr().out
    assert status == 0, out
    assert "kept" not in _stack_names()
    assert naming.config_bucket_name("kept", ACCOUNT) in _buckets()
    assert "sleeper-shared-jars" in _buckets() and _repositories() == {"shared/lambda", "shared/compaction"}
    assert "keep the artefacts of deployment shared (shared)" in out
    assert ": kept (sleeper.retain.infra.after.destroy=true)" in out


@pytest.mark.usefixtures("aws")
def should_change_nothing_in_a_dry_run_of_a_tear_down(capsys: pytest.CaptureFixture[str]) -> None:
    # Given a deployed instance with its own artefacts
    _deployed("still")
    _own_artefacts("still")
    # When its tear down is a dry run
    status = run(["teardown", "still", "--dry-run"])
    # Then it prints the plan and nothing changes
    out = capsys.readouterr().out
    assert status == 0
    assert "delete CloudFormation stack still" in out and "remove the artefacts: bucket s3://sleeper-still-jars" in out
    assert "still" in _stack_names() and "still/lambda" in _repositories()
    assert _client("events").describe_rule(Name=scheduled_rule_names("still")[0])["State"] == "ENABLED"


@pytest.mark.usefixtures("aws")
def should_tear_down_what_is_left_of_an_instance_without_properties(capsys: pytest.CaptureFixture[str]) -> None:
    # Given a stack left behind, its config bucket gone
    _client("cloudformation").create_stack(
        StackName="left", TemplateBody=json.dumps({"Resources": {"T": {"Type": "AWS::SNS::Topic"}}})
    )
    # When it is torn down by id
    status = run(["teardown", "left", "--force"])
    # Then the stack is deleted by the names the id gives
    out = capsys.readouterr().out
    assert status == 0, out
    assert "by its id alone" in out and "left" not in _stack_names()


def _configuration(tmp_path: Path, text: str) -> Path:
    directory = tmp_path / "config"
    directory.mkdir()
    (directory / "instance.properties").write_text(text, encoding="utf-8")
    return directory


@pytest.mark.usefixtures("aws")
def should_print_the_artefacts_plan_without_docker_in_a_dry_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given no Docker, an instance with compaction and bulk export on x86, and a wheel
    monkeypatch.setattr(deploy_cli, "docker_available", lambda: False)
    config = _configuration(tmp_path, "sleeper.id=arts\nsleeper.optional.stacks=CompactionStack,BulkExportStack\n"
                            "sleeper.userjars=filters-1.0-py3-none-any.whl\n")  # fmt: skip
    wheel = tmp_path / "filters-1.0-py3-none-any.whl"
    wheel.write_bytes(b"wheel")
    # When the artefacts are a dry run
    status = run(["artefacts", str(config), "--wheel", str(wheel), "--dry-run"])
    # Then it exits 0 saying what it would upload where, and creates nothing
    out = capsys.readouterr().out
    assert status == 0
    assert "bucket s3://sleeper-arts-jars (sleeper.jars.bucket)" in out
    assert f"upload {wheel} to s3://sleeper-arts-jars/filters-1.0-py3-none-any.whl" in out
    assert "image lambda: docker build --platform linux/arm64 -f containers/lambda/Dockerfile -> ECR repository " \
           "arts/lambda, tag latest" in out  # fmt: skip
    assert "image compaction: docker build --platform linux/arm64" in out
    assert "image bulk-export: docker build --platform linux/amd64 -f containers/bulk-export/Dockerfile" in out
    assert "image ingest" not in out
    assert "(Docker is not available: the images cannot be built here)" in out
    assert _buckets() == set() and _repositories() == set()


@pytest.mark.usefixtures("aws")
def should_refuse_in_one_line_without_docker(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given no Docker
    monkeypatch.setattr(deploy_cli, "docker_available", lambda: False)
    config = _configuration(tmp_path, "sleeper.id=arts\n")
    # When the artefacts are uploaded
    status = run(["artefacts", str(config)])
    # Then it fails in one line, having created nothing
    err = capsys.readouterr().err.strip()
    assert status != 0
    (line,) = err.splitlines()
    assert "cannot build the images: Docker is not available" in line
    assert _buckets() == set() and _repositories() == set()


@pytest.mark.usefixtures("aws")
def should_create_the_bucket_and_repositories_and_push_the_images(tmp_path: Path) -> None:
    # Given a deployed instance with the ingest stack, Docker (faked) and a wheel
    _deployed("pushed", **{"sleeper.optional.stacks": "IngestStack", "sleeper.lambda.cpu.architecture": "X86_64"})
    wheel = tmp_path / "filters-1.0-py3-none-any.whl"
    wheel.write_bytes(b"wheel")
    commands: list[tuple[list[str], bytes | None]] = []

    def docker(argv: Sequence[str], stdin: bytes | None) -> int:
        commands.append((list(argv), stdin))
        return 0

    # When its artefacts are uploaded by id
    deploy_cli.run_artefacts(None, instance_id="pushed", wheels=[wheel], image_tag="v1", docker_present=True,
                             docker=docker)  # fmt: skip
    # Then the bucket holds the wheel and the repositories exist
    body = _client("s3").get_object(Bucket="sleeper-pushed-jars", Key=wheel.name)["Body"].read()
    assert body == b"wheel"
    assert _repositories() == {"pushed/lambda", "pushed/ingest"}
    # And Docker logged in, then built each image for its platform from the checkout and pushed it
    (login, password), *rest = commands
    assert login[:4] == ["docker", "login", "--username", "AWS"] and password
    builds = [argv for argv, _ in rest if argv[1] == "build"]
    pushes = [argv[2] for argv, _ in rest if argv[1] == "push"]
    assert [(b[3], Path(b[5]).parent.name) for b in builds] == [("linux/amd64", "lambda"), ("linux/amd64", "ingest")]
    assert all(Path(b[5]).is_file() for b in builds)
    assert [p.rsplit("/", 2)[-2:] for p in pushes] == [["pushed", "lambda:v1"], ["pushed", "ingest:v1"]]


@pytest.mark.usefixtures("aws")
def should_build_and_upload_the_wheel_of_an_iterator_project(tmp_path: Path) -> None:
    # Given a pure Python iterator project, and a configuration naming its wheel
    project = tmp_path / "my_iterators"
    (project / "my_iterators").mkdir(parents=True)
    (project / "my_iterators" / "__init__.py").write_text("", encoding="utf-8")
    (project / "setup.py").write_text(
        "from setuptools import setup\nsetup(name='my_iterators', version='1.0', packages=['my_iterators'])\n",
        encoding="utf-8",
    )
    config = _configuration(tmp_path, "sleeper.id=built\nsleeper.userjars=my_iterators-1.0-py3-none-any.whl\n")
    # When the artefacts are uploaded with the project as --wheel (Docker faked)
    deploy_cli.run_artefacts(config, wheels=[project], docker_present=True, docker=lambda argv, stdin: 0)
    # Then its wheel was built and is in the bucket under the name sleeper.userjars gives
    keys = [o["Key"] for o in _client("s3").list_objects_v2(Bucket="sleeper-built-jars")["Contents"]]
    assert keys == ["my_iterators-1.0-py3-none-any.whl"]


@pytest.mark.usefixtures("aws")
def should_tear_down_nothing_unless_confirmed() -> None:
    # Given a deployed instance
    _deployed("asked")
    # When its tear down is not confirmed
    with pytest.raises(SleeperError, match="not confirmed"):
        deploy_cli.run_teardown_by_id("asked", confirm=lambda question: False)
    # Then its stack and rules are as they were
    assert "asked" in _stack_names()
    assert _client("events").describe_rule(Name=scheduled_rule_names("asked")[0])["State"] == "ENABLED"
