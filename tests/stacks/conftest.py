"""One synthesis of the example instance per test session (jsii synthesis is slow); tests assert on its templates."""

from __future__ import annotations

import os

os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")
os.environ.setdefault("JSII_SILENCE_WARNING_DEPRECATED_NODE_VERSION", "1")
os.environ.setdefault("JSII_SILENCE_WARNING_UNTESTED_NODE_VERSION", "1")

import copy  # noqa: E402
from collections.abc import Iterator  # noqa: E402
from dataclasses import dataclass, field  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

import pytest  # noqa: E402

pytest.importorskip("aws_cdk")

import aws_cdk as cdk  # noqa: E402
from aws_cdk.assertions import Template  # noqa: E402

import app as sleeper_app  # noqa: E402
from stacks.instance import SleeperInstanceStack  # noqa: E402


@dataclass(frozen=True)
class Synthesized:
    """The example instance, synthesized once."""

    app: cdk.App
    stack: SleeperInstanceStack
    templates: dict[str, Template]
    outdir: Path

    def template(self, name: str) -> Template:
        return self.templates[name]

    json_cache: dict[str, dict[str, Any]] = field(default_factory=dict)

    def json(self, name: str) -> dict[str, Any]:
        """A template as JSON: read from the CDK's assertions once (each read goes through jsii, about a second for
        the larger templates), then copied, so a test changing its copy changes no other test's."""
        if name not in self.json_cache:
            self.json_cache[name] = self.templates[name].to_json()
        return copy.deepcopy(self.json_cache[name])

    def resources(self, resource_type: str) -> list[tuple[str, dict[str, Any]]]:
        """Every resource of a type across all templates, as (template name, resource)."""
        found: list[tuple[str, dict[str, Any]]] = []
        for name in self.templates:
            for resource in self.json(name).get("Resources", {}).values():
                if resource["Type"] == resource_type:
                    found.append((name, resource))
        return found


@pytest.fixture(scope="session")
def synthesized(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Synthesized]:
    outdir = tmp_path_factory.mktemp("cdk.out")
    app = cdk.App(analytics_reporting=False, outdir=str(outdir), context={"artefacts": "ecr", "example": "true"})
    stack = sleeper_app.build(app)
    app.synth()
    templates = {"Instance": Template.from_stack(stack)}
    templates.update({name: Template.from_stack(nested) for name, nested in stack.parts.items()})
    yield Synthesized(app=app, stack=stack, templates=templates, outdir=outdir)
