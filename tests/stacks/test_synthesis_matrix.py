"""The synthesis matrix: the instance synthesizes in every shape a user deploys it in, and each shape keeps the
least-privilege rules of the example instance (``test_iam_matrix.py``), passes cdk-nag and cfn-lint, and builds
exactly the nested stacks ``sleeper deploy --dry-run`` lists.

The shapes: a new VPC (the example, every supported optional stack: the session's ``synthesized``) or an existing one
with subnets (``sleeper.vpc`` and ``sleeper.subnets``, as Sleeper's ``deployNew.sh <id> <vpc> <subnets>`` gives,
the VPC lookup supplied as the ``cdk`` command caches it); every optional stack or none; each default optional stack
left out in turn; Sleeper's ``example/full`` and ``example/basic`` as they ship; the S3-only state store; EKS bulk
import on Fargate and on Auto Mode; X-Ray tracing on (the existing VPC with every stack) and off (the others). Each
is synthesized once per session (``conftest.synthesize_matrix``). Lambda functions run on ARM64 but in one (x86_64).
"""

from __future__ import annotations

import fnmatch
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import pytest

pytest.importorskip("aws_cdk")

from sleeper.cdk import app as sleeper_app  # noqa: E402
from sleeper.core import operations  # noqa: E402
from sleeper.core.deploy.plan import planned_stacks  # noqa: E402
from sleeper.core.properties import instance_common as common  # noqa: E402
from tests.stacks.conftest import ACCOUNT, REGION, MatrixConfiguration, Synthesized, cfn_lint  # noqa: E402
from tests.stacks.test_iam_matrix import (  # noqa: E402
    A_DATA_FILE,
    ACKNOWLEDGED_WILDCARDS,
    DATA_BUCKET,
    DELETES,
    GARBAGE_COLLECTOR,
    S3_DELETE,
    Grant,
    _approved_lines,
    matrix,
)

pytestmark = pytest.mark.slow

_Test = TypeVar("_Test", bound=Callable[..., None])

EXAMPLES = Path(__file__).resolve().parents[1] / "fixtures" / "sleeper_examples"

VPC = "vpc-0a1b2c3d4e5f60718"
SUBNETS = ("subnet-0a1b2c3d4e5f60711", "subnet-0a1b2c3d4e5f60722")

EXAMPLE = "example"
"""The session's example instance: a new VPC, every supported optional stack (``app.example_properties``)."""


def _example(**changes: str) -> str:
    properties = sleeper_app.example_properties()
    for name, value in changes.items():
        properties.set(name, value)
    return properties.to_text()


ALL_ON = ",".join(sleeper_app.EXAMPLE_OPTIONAL_STACKS)
DEFAULT_ON = [s for s in common.OPTIONAL_STACKS_DEFAULT if s in sleeper_app.EXAMPLE_OPTIONAL_STACKS]
"""The default optional stacks this port deploys (Sleeper's ``EmrStudioStack`` is ignored with a warning)."""

CONFIGURATIONS = [
    MatrixConfiguration(
        "existing-vpc-all-on",
        _example(**{"sleeper.vpc": VPC, "sleeper.subnets": ",".join(SUBNETS), "sleeper.tracing.enabled": "true"}),
        vpc=(VPC, SUBNETS),
    ),
    MatrixConfiguration(
        "existing-vpc-default-stacks-from-context",
        "sleeper.id=example\n",
        context=(("vpc", VPC), ("subnets", ",".join(SUBNETS))),
        vpc=(VPC, SUBNETS),
    ),
    MatrixConfiguration(
        "none-on", _example(**{"sleeper.optional.stacks": "", "sleeper.lambda.cpu.architecture": "X86_64"})
    ),
    *(
        MatrixConfiguration(
            f"default-without-{off}",
            _example(**{"sleeper.optional.stacks": ",".join(s for s in DEFAULT_ON if s != off)}),
        )
        for off in DEFAULT_ON
    ),
    MatrixConfiguration(
        "sleeper-example-full", source=EXAMPLES / "full", vpc=("vpc-0123456789abcdef0", ("subnet-0123456789abcdef0",))
    ),  # fmt: skip
    MatrixConfiguration(
        "sleeper-example-basic", source=EXAMPLES / "basic", vpc=("vpc-0123456789abcdef0", ("subnet-0123456789abcdef0",))
    ),  # fmt: skip
    MatrixConfiguration(
        "s3-only-state-store", _example(**{"sleeper.default.table.statestore.classname": "S3TransactionLogStateStore"})
    ),
    MatrixConfiguration(
        "eks-automode-existing-vpc",
        _example(
            **{
                "sleeper.optional.stacks": "EksBulkImportStack",
                "sleeper.bulk.import.eks.cluster.type": "automode",
                "sleeper.vpc": VPC,
                "sleeper.subnets": ",".join(SUBNETS),
            }
        ),
        vpc=(VPC, SUBNETS),
    ),  # fmt: skip
]
BY_NAME = {c.name: c for c in CONFIGURATIONS}

SECOND_HALF = frozenset([*(f"default-without-{off}" for off in DEFAULT_ON), "sleeper-example-basic"])
"""The configurations ``test_synthesis_matrix_b.py`` checks with this module's tests, so that another pytest-xdist
worker can take them (the matrix is most of ``tests/stacks``' time, and a file runs on one worker). Each configuration
is synthesized by one of the two files only: the tests here that name configurations themselves name none of these."""

SECOND = False
"""Whether this module checks :data:`SECOND_HALF` (``test_synthesis_matrix_b.py``) or the other configurations."""


def every_configuration(test: _Test) -> _Test:
    """Runs a test on every configuration of its module's half, the example too (the session's, already synthesized,
    in this module's half)."""
    test.matrix = "every"  # type: ignore[attr-defined]
    return test


def new_configurations(test: _Test) -> _Test:
    """Runs a test on every configuration of its module's half but the example (``test_iam_matrix.py``,
    ``test_nag.py`` and ``test_iac_checks.py`` check it)."""
    test.matrix = "new"  # type: ignore[attr-defined]
    return test


def configurations(kind: str, second: bool) -> list[str]:
    """The configurations of one half a test of ``kind`` (``every``, ``new``) runs on."""
    names = [EXAMPLE, *BY_NAME] if kind == "every" else list(BY_NAME)
    return [name for name in names if (name in SECOND_HALF) is second]


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    kind = getattr(metafunc.function, "matrix", None)
    if kind is not None:
        metafunc.parametrize("configured", configurations(kind, metafunc.module.SECOND), indirect=True)


@pytest.fixture(scope="module")
def configured(request: pytest.FixtureRequest, synthesize_matrix: Any) -> Synthesized:
    if request.param == EXAMPLE:
        synthesized: Synthesized = request.getfixturevalue("synthesized")
        return synthesized
    return synthesize_matrix(BY_NAME[request.param])  # type: ignore[no-any-return]


def _normalize(grant: Grant, instance_id: str) -> Grant:
    """A grant as the example instance's matrix writes it: the account, region and instance id symbolic."""

    def stable(text: str) -> str:
        text = text.replace(f"sleeper-{instance_id}-", "sleeper-example-").replace(ACCOUNT, "${A}")
        text = text.replace(f":repository/{instance_id}/", ":repository/example/")
        return re.sub(r"arn:aws:", "arn:${P}:", text.replace(REGION, "${R}"))

    return Grant(grant.principal, grant.action, stable(grant.resource))


@pytest.fixture(scope="module")
def grants(configured: Synthesized) -> tuple[list[Grant], dict[str, str]]:
    found, kinds = matrix(configured)
    instance_id = configured.stack.core.ctx.instance_id
    return [_normalize(g, instance_id) for g in found], kinds


@every_configuration
def should_build_exactly_the_planned_stacks_with_every_lookup_supplied(configured: Synthesized) -> None:
    # Given the properties the app deployed (the context's overrides applied)
    ctx = configured.stack.core.ctx
    # When the plan the dry run prints is made from them
    planned = [stack.name for stack in planned_stacks(ctx.properties, ctx.tables)]
    # Then the app built those nested stacks, and asked for no context it was not given
    assert sorted(planned) == sorted(configured.stack.parts)
    manifest = json.loads((configured.outdir / "manifest.json").read_text(encoding="utf-8"))
    assert manifest.get("missing", []) == []


OWN_GRANTS = {"eks-automode-existing-vpc": "EksBulkImport/"}
"""Configurations with roles the example has not (its EKS cluster is on Fargate), by the stack holding them: their
grants are checked by the rules below only."""

X86_64 = frozenset({"none-on"})
"""Configurations with ``sleeper.lambda.cpu.architecture=X86_64``; the others' functions run on ARM64, the default."""

TRACED = frozenset({"existing-vpc-all-on"})
"""Configurations with ``sleeper.tracing.enabled=true``; the others leave it false, as the example does."""

XRAY_ACTIONS = frozenset({"xray:PutTelemetryRecords", "xray:PutTraceSegments"})
"""What active tracing adds to each function's role (on ``*``: X-Ray has no resource-level permissions)."""


def _tracing_grant(grant: Grant, kinds: dict[str, str]) -> bool:
    return grant.action in XRAY_ACTIONS and grant.resource == "*" and kinds.get(grant.principal) == "role"


@new_configurations
def should_grant_nothing_the_approved_example_matrix_does_not(
    request: pytest.FixtureRequest, grants: tuple[list[Grant], dict[str, str]]
) -> None:
    # Given the approved grants of the example (every optional stack), and those of this configuration
    approved = set(_approved_lines())
    found, kinds = grants
    name = request.node.callspec.params["configured"]
    # When those the example has not are collected (the configuration's own stack's left out, if it has one; a traced
    # configuration's X-Ray calls too)
    own = OWN_GRANTS.get(name, "\0")
    extra = sorted(
        g.line()
        for g in found
        if g.line() not in approved
        and not g.principal.startswith(own)
        and not (name in TRACED and _tracing_grant(g, kinds))
    )
    # Then there are none: no configuration gives a role more than the approved example does
    assert extra == []


@new_configurations
def should_grant_no_wildcard_action(grants: tuple[list[Grant], dict[str, str]]) -> None:
    found, _ = grants
    actions = {g.action.removeprefix("DENY ") for g in found if not g.action.startswith("<")}
    assert sorted(a for a in actions if a == "*" or re.fullmatch(r"[\w-]+:\*", a)) == []
    assert {a for a in actions if "*" in a} <= set(ACKNOWLEDGED_WILDCARDS)


@new_configurations
def should_delete_only_what_the_example_deletes(grants: tuple[list[Grant], dict[str, str]]) -> None:
    found, kinds = grants
    deletes = {(g.principal, g.resource) for g in found if S3_DELETE.match(g.action)}
    data_file_roles = {who for who, r in deletes if fnmatch.fnmatchcase(A_DATA_FILE, r) and kinds[who] == "role"}
    assert data_file_roles <= {GARBAGE_COLLECTOR}
    assert not any(r in ("*", f"{DATA_BUCKET}/*") for _, r in deletes)
    assert sorted(deletes - set(DELETES)) == []


@new_configurations
def should_let_each_function_receive_only_from_its_own_queue(grants: tuple[list[Grant], dict[str, str]]) -> None:
    found, kinds = grants
    receives = {
        (g.principal, g.resource) for g in found if g.action == "sqs:ReceiveMessage" and kinds[g.principal] == "role"
    }
    queues_of: dict[str, set[str]] = {}
    for role, queue in receives:
        queues_of.setdefault(role, set()).add(queue)
    assert {role: sorted(q) for role, q in queues_of.items() if len(q) > 1} == {}
    assert sorted((r, q) for r, q in receives if not q.startswith("${" + r.split("/", 1)[0] + "/")) == []


@new_configurations
def should_pass_aws_solutions_checks(configured: Synthesized) -> None:
    cdk_nag = pytest.importorskip("cdk_nag")
    report = cdk_nag.AwsSolutionsChecks().validate_scope(configured.app)
    violations = [(v.rule_name, [r.construct_path for r in v.violating_resources]) for v in report.violations]
    assert violations == []


@new_configurations
def should_find_no_cfn_lint_error(configured: Synthesized) -> None:
    from tests.stacks.test_iac_checks import ALLOWED_CFN_LINT_WARNINGS

    pytest.importorskip("cfnlint.api")
    # most nested templates are the same from one configuration to another, and as the example's: cfn_lint lints
    # each distinct template once in the run
    matches = []
    for path in sorted(Path(configured.outdir).glob("*.template.json")):
        matches.extend((path.name, rule, message) for rule, message in cfn_lint(path.read_text(encoding="utf-8")))
    assert [m for m in matches if m[1].startswith("E")] == []
    assert {m[1] for m in matches} <= ALLOWED_CFN_LINT_WARNINGS


@pytest.mark.parametrize("name", ["existing-vpc-default-stacks-from-context", "sleeper-example-full", "none-on"])
def should_list_in_a_dry_run_exactly_the_stacks_the_app_builds(
    name: str, synthesize_matrix: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given a configuration the app built, and the context it was given
    from sleeper.cli.deploy import run_deploy

    configuration = BY_NAME[name]
    built = synthesize_matrix(configuration)
    capsys.readouterr()
    # When sleeper deploy --dry-run is given the same
    run_deploy(built.outdir.parent / "config", context=[f"{k}={v}" for k, v in configuration.context], dry_run=True)
    listed = re.findall(r"^  (\w+): ", capsys.readouterr().out, flags=re.MULTILINE)
    # Then it lists the nested stacks the app built, no more (no Networking stack for an existing VPC) and no fewer
    assert sorted(listed) == sorted(built.stack.parts)


def should_run_spark_jobs_in_the_subnets_given_by_id(synthesize_matrix: Any) -> None:
    # Given an instance in an existing VPC, its subnets given by id (no availability zone known at synthesis)
    built = synthesize_matrix(BY_NAME["existing-vpc-all-on"])
    # When its EMR Serverless application and persistent EMR cluster are read
    serverless = built.json("EmrServerlessBulkImport")["Resources"]
    persistent = built.json("PersistentEmrBulkImport")["Resources"]
    (application,) = [r for r in serverless.values() if r["Type"] == "AWS::EMRServerless::Application"]
    (cluster,) = [r for r in persistent.values() if r["Type"] == "AWS::EMR::Cluster"]
    # Then both run in exactly those subnets
    assert application["Properties"]["NetworkConfiguration"]["SubnetIds"] == list(SUBNETS)
    assert cluster["Properties"]["Instances"]["Ec2SubnetIds"] == list(SUBNETS)


CDK_PROVIDERS = re.compile(
    r"^(AWS679f53fac002430cb0da5b7982bd2287|\w*CustomResourceProviderHandler|\w*KubectlProviderHandler"
    r"|\w*ProviderframeworkonEvent)[0-9A-F]{8}$"
)
"""The logical ids of the CDK's own custom resource handlers (not Sleeper's code) in the instance's stacks: the
``AwsCustomResource`` singleton, the core providers (auto-deleting objects, the default security group, the EKS OIDC
provider, ...) and the EKS kubectl provider with its provider framework function."""

CDK_PROVIDER_STACKS = re.compile(r"awscdkawseks(ClusterResource|Kubectl)Provider[0-9A-F]{8}\.nested\.template\.json$")
"""The template files of the nested stacks the CDK's EKS cluster adds for its own handlers."""


def _functions(configured: Synthesized) -> tuple[list[tuple[str, dict[str, Any]]], list[str]]:
    """The instance's own functions as (template file/logical id, properties), and the logical ids of the CDK's in the
    instance's stacks: read from the synthesized template files (through the CDK's assertions takes seconds)."""
    ours: list[tuple[str, dict[str, Any]]] = []
    cdk_own: list[str] = []
    for path in sorted(configured.outdir.glob("*.template.json")):
        resources = json.loads(path.read_text(encoding="utf-8")).get("Resources", {})
        for logical_id, resource in resources.items():
            if resource["Type"] != "AWS::Lambda::Function":
                continue
            properties = resource["Properties"]
            if properties.get("PackageType") == "Image":
                ours.append((f"{path.name}/{logical_id}", properties))
            elif not CDK_PROVIDER_STACKS.search(path.name):
                cdk_own.append(logical_id)
    return ours, cdk_own


@every_configuration
def should_name_every_functions_service_and_metrics_namespace(configured: Synthesized) -> None:
    # Given every function of the instance: its own, from the Lambda image, and the CDK's custom resource handlers
    ours, cdk_own = _functions(configured)
    namespace = configured.stack.core.ctx.get(common.METRICS_NAMESPACE)
    entries = {spec.handler: spec.name for spec in operations.HANDLERS}
    # When the Powertools variables of its own are read
    problems = []
    for where, properties in ours:
        variables = properties["Environment"]["Variables"]
        named = (variables.get("POWERTOOLS_SERVICE_NAME"), variables.get("POWERTOOLS_METRICS_NAMESPACE"))
        if named != (entries.get(variables["SLEEPER_HANDLER"]), namespace):
            problems.append(f"{where}: service and metrics namespace {named}")
    # Then each names its role in Sleeper (its registry entry) and the instance's metrics namespace, and every other
    # function is one of the CDK's own handlers
    assert ours and problems == []
    assert [i for i in cdk_own if not CDK_PROVIDERS.match(i)] == []


@every_configuration
def should_trace_every_function_with_x_ray_only_when_tracing_is_enabled(
    request: pytest.FixtureRequest, configured: Synthesized
) -> None:
    # Given a configuration with sleeper.tracing.enabled true, or false as the example's and most others'
    traced = request.node.callspec.params["configured"] in TRACED
    assert configured.stack.core.ctx.get_bool(common.TRACING_ENABLED) is traced
    # When its functions' tracing and Powertools tracer switch are read
    ours, _ = _functions(configured)
    found = {(p.get("TracingConfig", {}).get("Mode"), p["Environment"]["Variables"].get("POWERTOOLS_TRACE_DISABLED"))
             for _, p in ours}  # fmt: skip
    # Then every one is traced actively with the tracer on, or none has tracing configured (Lambda passes a trace
    # header through) and the tracer is off
    assert found == ({("Active", "false")} if traced else {(None, "true")})


@every_configuration
def should_run_every_function_on_arm64_unless_x86_64_is_asked_for(
    request: pytest.FixtureRequest, configured: Synthesized
) -> None:
    # Given a configuration leaving sleeper.lambda.cpu.architecture at ARM64, or setting X86_64
    expected = "x86_64" if request.node.callspec.params["configured"] in X86_64 else "arm64"
    # When its functions' architectures are read
    ours, _ = _functions(configured)
    # Then every one runs on that architecture
    assert ours and {tuple(p["Architectures"]) for _, p in ours} == {(expected,)}
