"""Every process that may run a table's iterator may read the iterator wheels ``sleeper.userjars`` lists in
``sleeper.jars.bucket`` (each key named; the jars the port cannot run, and the rest of the bucket, are not granted)."""

from __future__ import annotations

import json
from typing import Any

import pytest

pytest.importorskip("aws_cdk")

import aws_cdk as cdk  # noqa: E402
from aws_cdk.assertions import Template  # noqa: E402

from sleeper.cdk import app as sleeper_app  # noqa: E402

pytestmark = pytest.mark.slow

PROPERTIES = {
    "sleeper.id": "usercode",
    "sleeper.optional.stacks": "CompactionStack,QueryStack",
    "sleeper.jars.bucket": "my-jars",
    "sleeper.userjars": "iterators/acme_filters-1.0-py3-none-any.whl,legacy.jar",
}


def should_grant_the_listed_wheels_to_query_and_compaction(tmp_path: Any) -> None:
    path = tmp_path / "instance.properties"
    path.write_text("".join(f"{k}={v}\n" for k, v in PROPERTIES.items()), encoding="utf-8")
    app = cdk.App(
        analytics_reporting=False,
        outdir=str(tmp_path / "cdk.out"),
        context={"artefacts": "ecr", "propertiesFile": str(path)},
    )
    stack = sleeper_app.build(app)
    app.synth()
    templates = [Template.from_stack(s).to_json() for s in (stack, *stack.parts.values())]
    statements = [
        s
        for t in templates
        for r in t.get("Resources", {}).values()
        if r["Type"] == "AWS::IAM::Policy"
        for s in r["Properties"]["PolicyDocument"]["Statement"]
    ]
    jars = [s for s in statements if "my-jars" in str(s.get("Resource"))]
    # Then reading the wheel is granted, to several roles, and only s3:GetObject on that one key
    assert len(jars) >= 2
    for statement in jars:
        assert statement["Action"] == "s3:GetObject"
        assert "iterators/acme_filters-1.0-py3-none-any.whl" in str(statement["Resource"])
        assert "legacy.jar" not in str(statement["Resource"])


def should_set_the_jars_bucket_to_the_artefacts_bucket_when_unset(tmp_path: Any) -> None:
    # Given iterator wheels listed and no sleeper.jars.bucket
    path = tmp_path / "instance.properties"
    values = {k: v for k, v in PROPERTIES.items() if k != "sleeper.jars.bucket"}
    path.write_text("".join(f"{k}={v}\n" for k, v in values.items()), encoding="utf-8")
    app = cdk.App(analytics_reporting=False, outdir=str(tmp_path / "cdk.out"),
                  context={"artefacts": "ecr", "propertiesFile": str(path)})  # fmt: skip
    # When the instance is built
    stack = sleeper_app.build(app)
    # Then the deployment records the bucket sleeper artefacts fills, and grants reading the wheel there
    assert stack.core.cdk_properties["sleeper.jars.bucket"] == "sleeper-usercode-jars"
    policies = [Template.from_stack(s).to_json() for s in (stack, *stack.parts.values())]
    assert "sleeper-usercode-jars/iterators/acme_filters-1.0-py3-none-any.whl" in json.dumps(policies)
