"""One synthesis of the example instance per test session (jsii synthesis is slow); tests assert on its templates."""

from __future__ import annotations

import os

os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")
os.environ.setdefault("JSII_SILENCE_WARNING_DEPRECATED_NODE_VERSION", "1")
os.environ.setdefault("JSII_SILENCE_WARNING_UNTESTED_NODE_VERSION", "1")

import copy  # noqa: E402
from collections.abc import Callable, Iterator  # noqa: E402
from dataclasses import dataclass, field  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

import pytest  # noqa: E402

pytest.importorskip("aws_cdk")

import aws_cdk as cdk  # noqa: E402
from aws_cdk.assertions import Template  # noqa: E402

from sleeper.cdk import app as sleeper_app  # noqa: E402
from sleeper.cdk.instance import SleeperInstanceStack  # noqa: E402


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


ACCOUNT = "123456789012"
"""The account of the configurations synthesized with an existing VPC (a VPC lookup needs a concrete one)."""

REGION = "eu-west-2"

LOOKUP_AZS = ("eu-west-2a", "eu-west-2b")


def vpc_lookup_context(vpc_id: str, subnet_ids: tuple[str, ...]) -> dict[str, Any]:
    """The context ``ec2.Vpc.from_lookup`` reads for ``vpc_id`` in :data:`ACCOUNT` and :data:`REGION`, as the ``cdk``
    command writes it to ``cdk.context.json`` after looking the VPC up: a private subnet per given id (and a public
    subnet per zone), so a synthesis needs no AWS account."""
    key = f"vpc-provider:account={ACCOUNT}:filter.vpc-id={vpc_id}:region={REGION}:returnAsymmetricSubnets=true"

    def subnet(subnet_id: str, index: int) -> dict[str, str]:
        zone = LOOKUP_AZS[index % len(LOOKUP_AZS)]
        return {"subnetId": subnet_id, "cidr": f"10.0.{index * 16}.0/20", "availabilityZone": zone,
                "routeTableId": f"rtb-{index:017x}"}  # fmt: skip

    private = [subnet(s, i) for i, s in enumerate(subnet_ids)]
    public = [subnet(f"subnet-{9000 + i:017x}", 8 + i) for i in range(len(LOOKUP_AZS))]
    return {
        key: {
            "vpcId": vpc_id,
            "vpcCidrBlock": "10.0.0.0/16",
            "ownerAccountId": ACCOUNT,
            "availabilityZones": [],
            "subnetGroups": [
                {"name": "Private", "type": "Private", "subnets": private},
                {"name": "Public", "type": "Public", "subnets": public},
            ],
        }
    }


@dataclass(frozen=True)
class MatrixConfiguration:
    """One configuration of the synthesis matrix (``tests/stacks/test_synthesis_matrix.py``).

    Attributes:
        name: The test id.
        properties: ``instance.properties`` text, written to a configuration directory with ``files``.
        source: A configuration directory to copy instead (Sleeper's examples as they ship).
        context: More CDK context (``vpc``, ``subnets``, ``id``).
        vpc: ``(vpc id, subnet ids)`` to supply the lookup of, synthesizing in :data:`ACCOUNT` and :data:`REGION`.
    """

    name: str
    properties: str = ""
    source: Path | None = None
    context: tuple[tuple[str, str], ...] = ()
    vpc: tuple[str, tuple[str, ...]] | None = None


def _synthesize_configuration(configuration: MatrixConfiguration, directory: Path, outdir: Path) -> Synthesized:
    import shutil

    if configuration.source is not None:
        shutil.copytree(configuration.source, directory, dirs_exist_ok=True)
    else:
        directory.mkdir(parents=True, exist_ok=True)
        (directory / "instance.properties").write_text(configuration.properties, encoding="utf-8")
    context: dict[str, Any] = {"artefacts": "ecr", "configurationDir": str(directory), **dict(configuration.context)}
    with pytest.MonkeyPatch.context() as patch:
        if configuration.vpc is not None:
            context.update(vpc_lookup_context(*configuration.vpc))
            patch.setenv("CDK_DEFAULT_ACCOUNT", ACCOUNT)
            patch.setenv("CDK_DEFAULT_REGION", REGION)
        else:
            patch.delenv("CDK_DEFAULT_ACCOUNT", raising=False)
            patch.delenv("CDK_DEFAULT_REGION", raising=False)
        app = cdk.App(analytics_reporting=False, outdir=str(outdir), context=context)
        stack = sleeper_app.build(app)
        app.synth()
    templates = {"Instance": Template.from_stack(stack)}
    templates.update({name: Template.from_stack(nested) for name, nested in stack.parts.items()})
    return Synthesized(app=app, stack=stack, templates=templates, outdir=outdir)


@pytest.fixture(scope="session")
def synthesize_matrix(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Callable[[MatrixConfiguration], Synthesized]]:
    """Synthesizes a matrix configuration once per session, however many tests read it."""
    cache: dict[str, Synthesized] = {}

    def synthesize(configuration: MatrixConfiguration) -> Synthesized:
        if configuration.name not in cache:
            base = tmp_path_factory.mktemp(f"matrix-{configuration.name}")
            cache[configuration.name] = _synthesize_configuration(configuration, base / "config", base / "cdk.out")
        return cache[configuration.name]

    yield synthesize


_LINT_RUNNERS: dict[str, Any] = {}
"""cfn-lint's runner per region: building one loads every rule (a few seconds), so each process builds it once."""

_LINTED: dict[str, list[tuple[str, str]]] = {}
"""cfn-lint's findings by template (:func:`_lint_key`) in this process."""

_SHARED_LINTS: list[Path] = []
"""Where this run's pytest-xdist workers share cfn-lint's findings (:func:`_share_cfn_lint_findings`), if they do."""


@pytest.fixture(scope="session", autouse=True)
def _share_cfn_lint_findings(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Under pytest-xdist, a directory of the run (the workers' base temporary directories share its parent) where
    each template's cfn-lint findings are written once: the matrix's configurations and the example (linted by
    ``test_iac_checks.py``) share most of their nested templates, and the files that lint them run on different
    workers."""
    if os.environ.get("PYTEST_XDIST_WORKER"):
        shared = tmp_path_factory.getbasetemp().parent / "cfn-lint-findings"
        shared.mkdir(exist_ok=True)
        _SHARED_LINTS.append(shared)
    yield
    _SHARED_LINTS.clear()


def _lint_key(text: str, region: str) -> str:
    """A template's identity for cfn-lint: its JSON as parsed (keys in their order; whitespace and indentation left
    out, which change no finding this module returns) and the region."""
    import hashlib
    import json

    canonical = json.dumps(json.loads(text), separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(f"{region}\0{canonical}".encode()).hexdigest()


def _lint_once(key: str, lint: Callable[[], list[tuple[str, str]]]) -> list[tuple[str, str]]:
    """``lint()``'s findings, computed once per template for the process, and once for the run when the workers share
    a directory: a worker takes the template's lock file, reads the findings if another wrote them, else lints and
    writes them. A worker needing a template another is linting waits on the lock, which the system frees if that
    worker dies (the findings then missing, the next one lints it)."""
    import fcntl
    import json

    if key in _LINTED:
        return _LINTED[key]
    if not _SHARED_LINTS:
        _LINTED[key] = lint()
        return _LINTED[key]
    result = _SHARED_LINTS[0] / f"{key}.json"
    with open(_SHARED_LINTS[0] / f"{key}.lock", "a", encoding="utf-8") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if result.exists():
            found = [(rule, message) for rule, message in json.loads(result.read_text(encoding="utf-8"))]
        else:
            found = lint()
            partial = result.with_suffix(f".{os.getpid()}.partial")
            partial.write_text(json.dumps(found), encoding="utf-8")
            partial.replace(result)
    _LINTED[key] = found
    return found


def cfn_lint(text: str, region: str = REGION) -> list[tuple[str, str]]:
    """cfn-lint's findings on a template's JSON text, as (rule id, message), as ``cfnlint.api.lint`` with
    ``ManualArgs(regions=[region])`` finds them, through one runner per region for the process.

    A template is linted once per test run: the findings are kept by the template's parsed JSON and region, in the
    process and, under pytest-xdist, for every worker (:func:`_share_cfn_lint_findings`). Most nested templates of the
    synthesis matrix's configurations are the same as the example's, and linting is most of the matrix's time."""
    pytest.importorskip("cfnlint.api")
    from cfnlint.config import ConfigMixIn
    from cfnlint.decode.decode import decode_str
    from cfnlint.runner import Runner

    def lint() -> list[tuple[str, str]]:
        template, errors = decode_str(text)
        if errors:
            return [(match.rule.id, match.message) for match in errors]
        if template is None:
            return []
        if region not in _LINT_RUNNERS:
            _LINT_RUNNERS[region] = Runner(ConfigMixIn(regions=[region]))
        return [(match.rule.id, match.message) for match in _LINT_RUNNERS[region].validate_template(template)]

    try:
        key = _lint_key(text, region)
    except ValueError:  # not JSON: cfn-lint says why, every time
        return lint()
    return _lint_once(key, lint)
