"""The app's context handling: properties files, ids, tags, artefacts; asset mode synthesizes without Docker."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("aws_cdk")

import aws_cdk as cdk  # noqa: E402
from aws_cdk.assertions import Template  # noqa: E402

from sleeper.cdk import app as sleeper_app  # noqa: E402
from sleeper.cdk.context import DeployContext, tags_from_context  # noqa: E402


def should_read_instance_properties_from_the_file_named_in_the_context(tmp_path: Path) -> None:
    # Given
    path = tmp_path / "instance.properties"
    path.write_text("sleeper.id=mine\nsleeper.optional.stacks=QueryStack\n", encoding="utf-8")
    app = cdk.App(context={"propertiesfile": str(path)})

    # When
    properties = sleeper_app.load_properties(app)

    # Then
    assert properties.get("sleeper.id") == "mine"
    assert DeployContext.create(properties).optional_stacks == frozenset({"QueryStack"})


def should_override_the_id_from_the_context(tmp_path: Path) -> None:
    # Given
    path = tmp_path / "instance.properties"
    path.write_text("sleeper.id=mine\n", encoding="utf-8")
    app = cdk.App(context={"instanceproperties": str(path), "id": "other"})

    # When
    properties = sleeper_app.load_properties(app)

    # Then
    assert properties.get("sleeper.id") == "other"


def should_reject_invalid_properties(tmp_path: Path) -> None:
    # Given
    path = tmp_path / "instance.properties"
    path.write_text("sleeper.id=" + "x" * 30 + "\n", encoding="utf-8")
    app = cdk.App(context={"propertiesfile": str(path)})

    # When / Then
    with pytest.raises(ValueError, match="sleeper.id"):
        sleeper_app.load_properties(app)


def should_refuse_a_tracing_switch_that_is_not_a_boolean(tmp_path: Path) -> None:
    # Given an instance asking for X-Ray tracing with a value that is neither true nor false
    path = tmp_path / "instance.properties"
    path.write_text("sleeper.id=mine\nsleeper.tracing.enabled=yes\n", encoding="utf-8")
    app = cdk.App(context={"propertiesfile": str(path)})

    # When / Then the app refuses it before building anything, naming the property and what it takes
    with pytest.raises(ValueError, match=r"sleeper\.tracing\.enabled: invalid value 'yes', expected true or false"):
        sleeper_app.load_properties(app)


def should_read_tags_as_key_value_pairs() -> None:
    # When / Then
    assert tags_from_context("a,1,b,2") == {"a": "1", "b": "2"}
    assert tags_from_context({"a": 1}) == {"a": "1"}
    assert tags_from_context(None) == {}
    with pytest.raises(ValueError, match="pairs"):
        tags_from_context("a,1,b")


def should_choose_ecr_when_there_is_no_lambda_dockerfile(tmp_path: Path) -> None:
    # Given
    app = cdk.App()

    # When
    artefacts = sleeper_app.artefacts(app, tmp_path)

    # Then
    assert artefacts.mode == "ecr"


@pytest.mark.slow
def should_synthesize_a_minimal_instance_from_image_assets_without_docker(tmp_path: Path) -> None:
    # Given a repository root with the Lambda Dockerfile and an instance with no optional stacks
    root = tmp_path / "repo"
    dockerfile = root / "containers" / "lambda" / "Dockerfile"
    dockerfile.parent.mkdir(parents=True)
    dockerfile.write_text("FROM public.ecr.aws/lambda/python:3.11\n", encoding="utf-8")
    path = tmp_path / "instance.properties"
    path.write_text("sleeper.id=mini\nsleeper.optional.stacks=\n", encoding="utf-8")
    app = cdk.App(analytics_reporting=False, outdir=str(tmp_path / "out"), context={"propertiesfile": str(path)})

    # When
    stack = sleeper_app.build(app, root=root)
    app.synth()

    # Then
    assert stack.core.ctx.artefacts.mode == "asset"
    assert "Compaction" not in stack.parts and "Networking" not in stack.parts
    committer = Template.from_stack(stack.parts["StateStoreCommitter"]).to_json()
    functions = [r for r in committer["Resources"].values() if r["Type"] == "AWS::Lambda::Function"]
    image = functions[0]["Properties"]["Code"]["ImageUri"]
    assert "container-assets" in str(image)
    assert functions[0]["Properties"]["Architectures"] == ["arm64"]
    # And the Lambda image is built for ARM64, the functions' architecture by default
    manifests = [json.loads(p.read_text(encoding="utf-8")) for p in (tmp_path / "out").glob("*.assets.json")]
    platforms = {image["source"].get("platform") for m in manifests for image in m.get("dockerImages", {}).values()}
    assert platforms == {"linux/arm64"}


@pytest.mark.parametrize(
    ("image", "properties", "platform"),
    [
        ("lambda", {}, "linux/arm64"),
        ("lambda", {"sleeper.lambda.cpu.architecture": "X86_64"}, "linux/amd64"),
        ("compaction", {}, "linux/arm64"),
        ("compaction", {"sleeper.compaction.task.cpu.architecture": "X86_64"}, "linux/amd64"),
        ("bulk-export", {}, "linux/amd64"),
        ("bulk-export", {"sleeper.bulk.export.task.cpu.architecture": "ARM64"}, "linux/arm64"),
        ("ingest", {"sleeper.lambda.cpu.architecture": "ARM64"}, "linux/amd64"),
    ],
)
def should_build_each_image_for_the_architecture_that_runs_it(
    image: str, properties: dict[str, str], platform: str
) -> None:
    # Given an instance's architecture properties
    from sleeper.cdk.artefacts import Images
    from sleeper.core.properties import InstanceProperties

    ctx = DeployContext.create(InstanceProperties({"sleeper.id": "arch", **properties}))
    # When / Then the image asset is built for the functions' or tasks' architecture
    assert Images(ctx).platform(image).platform == platform
