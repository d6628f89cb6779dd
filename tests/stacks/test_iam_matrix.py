"""The golden matrix of role x action x resource (docs/reliability.md, row G2): every identity grant of the example
instance, compared with the approved ``tests/approvals/iam/role-action-resource.txt``, so that any change to what any
role may do fails here until the approved file is updated on purpose.

The matrix is read from the synthesized templates of every stack of the instance (the nested stacks and theirs, such
as CDK's EKS providers). One line per grant: the principal, the action and the resource, tab separated, sorted::

    Query/LeafPartitionQueryExecutorRole	sqs:ReceiveMessage	${Query/LeafPartitionQueryQueue.Arn}

Names are stable from run to run and from one construct's change to another's: a resource or role is named
``<stack>/<logical id>`` with CDK's 8 character hash suffix taken off, a reference through a nested stack's
parameters and outputs is followed to the resource it names (so a grant to another stack's role or queue reads as
that role or queue), ``${P}``, ``${A}``, ``${R}`` stand for the partition, account and region, and a condition
follows the resource after ``when``. Besides the statements of the roles' policies (attached or inline), each role has
lines for who may assume it (``<assumed by>``) and for the AWS managed policies attached to it (``<managed policy>``);
the instance's managed policies (for the user's own roles) are principals of their own.

When the change is intended, regenerate the approved file and review its diff before committing it::

    SLEEPER_UPDATE_APPROVALS=1 .venv/bin/pytest tests/stacks/test_iam_matrix.py

The rules the matrix must keep are asserted as well: no ``*`` or ``service:*`` action; only the garbage collector's
role may delete data files (and the admin managed policy, for table deletion: :data:`DATA_FILE_DELETERS`), only in
the data bucket; every S3 delete is one of :data:`DELETES`, each with its reason; each function's role receives
messages from one queue, of its own stack.
"""

from __future__ import annotations

import difflib
import fnmatch
import json
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk.assertions import Template

from tests.reliability_report import Reliability

pytestmark = pytest.mark.slow

APPROVED = Path(__file__).resolve().parents[1] / "approvals" / "iam" / "role-action-resource.txt"
"""The approved matrix."""

UPDATE = os.environ.get("SLEEPER_UPDATE_APPROVALS", "") not in ("", "0", "false")
"""Whether to write the approved file from this run instead of comparing with it."""

HEADER = """\
# Approved IAM matrix of the example instance (docs/reliability.md G2): principal <TAB> action <TAB> resource.
# Checked by tests/stacks/test_iam_matrix.py; after an intended change regenerate it and review the diff:
#   SLEEPER_UPDATE_APPROVALS=1 .venv/bin/pytest tests/stacks/test_iam_matrix.py
"""

PSEUDO = {
    "AWS::Partition": "${P}",
    "AWS::AccountId": "${A}",
    "AWS::Region": "${R}",
    "AWS::URLSuffix": "${URLSuffix}",
    "AWS::StackName": "${StackName}",
    "AWS::NoValue": "${NoValue}",
}

DATA_BUCKET = "arn:${P}:s3:::sleeper-example-table-data-${A}"
"""The data bucket's ARN as the matrix writes it (the example instance names its buckets)."""

A_DATA_FILE = f"{DATA_BUCKET}/0f3c2a9e/data/partition_root/5b6c.parquet"
"""A data file's ARN, to find the grants that cover data files (an IAM ``*`` matches ``/`` too, as ``fnmatch``)."""

GARBAGE_COLLECTOR = "GarbageCollector/GarbageCollectorHandlerRole"

DATA_FILE_DELETERS = {
    GARBAGE_COLLECTOR: "deletes the data files no longer referenced: the only function or task that deletes data",
    "ManagedPolicies/AdminPolicy": "the admin's table deletion removes everything a table holds; a managed policy for "
    "the user's own roles, attached to no role of the instance",
}
"""Who may delete data files, and why."""

DELETES = {
    (GARBAGE_COLLECTOR, f"{DATA_BUCKET}/*/data/*"): "garbage collection of data files",
    ("ManagedPolicies/AdminPolicy", f"{DATA_BUCKET}/*/data/*"): "table deletion (sleeper table delete)",
    ("ManagedPolicies/AdminPolicy", f"{DATA_BUCKET}/*/statestore/*"): "table deletion",
    ("ManagedPolicies/AdminPolicy", f"{DATA_BUCKET}/*/compactions/*"): "table deletion",
    ("ManagedPolicies/AdminPolicy", f"{DATA_BUCKET}/*/iceberg/*"): "table deletion",
    ("ManagedPolicies/AdminPolicy", f"{DATA_BUCKET}/*/"): "table deletion (directory markers)",
    ("ManagedPolicies/AdminPolicy", "arn:${P}:s3:::sleeper-example-config-${A}/instance.properties"): "instance "
    "properties edited or removed by the admin",
    ("ManagedPolicies/AdminPolicy", "arn:${P}:s3:::sleeper-example-config-${A}/tables/*"): "table properties of a "
    "deleted or renamed table",
    ("Compaction/JobDispatcherRole", f"{DATA_BUCKET}/*/compactions/*"): "a pending batch of compaction jobs, once "
    "its jobs are sent (Sleeper's CompactionJobDispatcher)",
    ("IcebergViews/IcebergPublishHandlerRole", f"{DATA_BUCKET}/*/iceberg/*"): "the Iceberg view's metadata it "
    "replaces (sleeper.iceberg.publisher)",
    ("StateStoreUpkeep/SnapshotDeletionHandlerRole", f"{DATA_BUCKET}/*/statestore/*"): "old state store snapshots "
    "(Sleeper's TransactionLogSnapshotDeleter)",
    ("StateStoreUpkeep/TransactionDeletionHandlerRole", f"{DATA_BUCKET}/*/statestore/*"): "transaction bodies "
    "older than the latest snapshot (Sleeper's TransactionLogTransactionDeleter)",
    ("BulkExport/PlannerRole", "arn:${P}:s3:::sleeper-example-bulk-export-results-${A}/*"): "output of an earlier "
    "run of the same export not in the new plan (sleeper.bulk_export.entry), in the export results bucket",
    ("RestApi/RestApiHandlerlambdaRole", "arn:${P}:s3:::sleeper-example-config-${A}/tables/*"): "table properties "
    "of a table deleted through the REST API",
    ("Query/QueryExecutorRole", "arn:${P}:s3:::sleeper-example-query-results-${A}/query-*"): "result files of an "
    "earlier run of a query sent again under the same id (sleeper.query.queued.handle_query_message)",
    (
        "Instance/AWS679f53fac002430cb0da5b7982bd2287ServiceRole",
        "${ConfigBucket/ConfigBucket.Arn}/instance.properties",
    ): ("the properties writer (a CDK AwsCustomResource) removes instance.properties when the stack is deleted"),
}
"""Every S3 delete of the instance: (principal, resource) -> why. Any other fails, as does a listed one not granted."""

ACKNOWLEDGED_WILDCARDS = {"ecs:Submit*": "ECS agent permissions CDK adds to the compaction EC2 hosts' role"}
"""Actions with a ``*`` in them (none is ``*`` or ``service:*``), and why."""

S3_DELETE = re.compile(r"^s3:Delete")


@dataclass(frozen=True, order=True)
class Grant:
    """One line of the matrix."""

    principal: str
    action: str
    resource: str

    def line(self) -> str:
        return f"{self.principal}\t{self.action}\t{self.resource}"


def _strip_hash(logical_id: str) -> str:
    """A logical id without CDK's hash suffix (8 upper case hex digits)."""
    return re.sub(r"(?<=.)[0-9A-F]{8}$", "", logical_id)


def _listed(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


class _Instance:
    """Every stack of the instance, by name, with what it takes to follow references between them."""

    def __init__(self, synthesized: Any) -> None:
        root: cdk.Stack = synthesized.stack
        self.templates: dict[str, dict[str, Any]] = {}
        self.names: dict[str, str] = {}
        """A stack's construct path -> its name (jsii gives a new Python object for each look-up, so no ``id``)."""
        self.parent_of: dict[str, tuple[str, str]] = {}
        """A nested stack's name -> (its parent's name, its resource's logical id in the parent)."""
        self.child_at: dict[tuple[str, str], str] = {}
        for construct in [root, *root.node.find_all()]:
            if not isinstance(construct, cdk.Stack) or construct.node.path in self.names:
                continue
            name = self._name(root, construct)
            self.names[construct.node.path] = name
            known: Template | None = synthesized.templates.get(name)
            self.templates[name] = dict((known or Template.from_stack(construct)).to_json())
        for construct in root.node.find_all():
            if isinstance(construct, cdk.NestedStack):
                parent = construct.nested_stack_parent
                assert parent is not None
                logical_id = parent.get_logical_id(construct.nested_stack_resource)  # type: ignore[arg-type]
                parent_name, name = self.names[parent.node.path], self.names[construct.node.path]
                self.parent_of[name] = (parent_name, logical_id)
                self.child_at[(parent_name, logical_id)] = name
        if len(set(self.names.values())) != len(self.names):
            raise AssertionError(f"two stacks share a name: {sorted(self.names.values())}")

    @staticmethod
    def _name(root: cdk.Stack, stack: cdk.Stack) -> str:
        if stack is root:
            return "Instance"
        return stack.node.path.removeprefix(root.node.path + "/")

    def resources(self) -> Iterator[tuple[str, str, dict[str, Any]]]:
        for name, template in self.templates.items():
            for logical_id, resource in template.get("Resources", {}).items():
                yield name, logical_id, resource

    def resolve(self, stack: str, value: Any) -> Any:
        """A CloudFormation value in a stable symbolic form: strings for references, lists and dicts kept."""
        if isinstance(value, list):
            return [self.resolve(stack, v) for v in value]
        if not isinstance(value, dict):
            return value
        if len(value) != 1 or not next(iter(value)).startswith(("Fn::", "Ref")):
            return {k: self.resolve(stack, v) for k, v in value.items()}
        ((function, argument),) = value.items()
        if function == "Ref":
            return self._ref(stack, argument)
        if function == "Fn::GetAtt":
            logical_id, attribute = argument if isinstance(argument, list) else argument.split(".", 1)
            return self._get_att(stack, logical_id, attribute)
        if function == "Fn::Join":
            separator, parts = argument
            return str(separator).join(str(self.resolve(stack, p)) for p in parts)
        if function == "Fn::Sub":
            text, variables = (argument, {}) if isinstance(argument, str) else argument
            return re.sub(
                r"\$\{([^}!]+)\}",
                lambda m: str(
                    self.resolve(stack, variables[m[1]])
                    if m[1] in variables
                    else self._get_att(stack, *m[1].split(".", 1))
                    if "." in m[1]
                    else self._ref(stack, m[1])
                ),
                text,
            )
        if function == "Fn::If":
            condition, when_true, when_false = argument
            return f"If({condition},{self.resolve(stack, when_true)},{self.resolve(stack, when_false)})"
        raise AssertionError(f"the matrix does not read {function} (in {stack}): {json.dumps(value)}")

    def _ref(self, stack: str, name: str) -> str:
        if name in PSEUDO:
            return PSEUDO[name]
        template = self.templates[stack]
        if name in template.get("Parameters", {}):
            if stack in self.parent_of:
                parent, logical_id = self.parent_of[stack]
                passed = self.templates[parent]["Resources"][logical_id]["Properties"]["Parameters"][name]
                return str(self.resolve(parent, passed))
            return f"${{param:{_strip_hash(name)}}}"
        if name in template.get("Resources", {}):
            return f"${{{stack}/{_strip_hash(name)}}}"
        raise AssertionError(f"{stack} has no parameter or resource {name}")

    def _get_att(self, stack: str, logical_id: str, attribute: str) -> str:
        child = self.child_at.get((stack, logical_id))
        if child is not None and attribute.startswith("Outputs."):
            output = self.templates[child]["Outputs"][attribute.removeprefix("Outputs.")]
            return str(self.resolve(child, output["Value"]))
        if logical_id not in self.templates[stack].get("Resources", {}):
            raise AssertionError(f"{stack} has no resource {logical_id}")
        return f"${{{stack}/{_strip_hash(logical_id)}.{attribute}}}"

    def role_name(self, stack: str, reference: Any) -> str:
        """The stable name of a role a policy is attached to (``${Stack/Role}`` -> ``Stack/Role``)."""
        resolved = str(self.resolve(stack, reference))
        match = re.fullmatch(r"\$\{([^}]+)\}", resolved)
        if match is None:
            raise AssertionError(f"a policy in {stack} is attached to a role the matrix cannot name: {resolved}")
        return match[1]


def _stable(text: str) -> str:
    """Content hashes (asset keys, image digests) left out, so the matrix changes with the grants only."""
    return re.sub(r"[0-9a-f]{64}", "<hash>", text)


def _statement_grants(instance: _Instance, stack: str, principal: str, statement: dict[str, Any]) -> Iterator[Grant]:
    unknown = set(statement) - {"Sid", "Effect", "Action", "Resource", "Condition"}
    if unknown:
        raise AssertionError(f"{principal} has a statement with {sorted(unknown)}, which the matrix does not read")
    condition = statement.get("Condition")
    when = "" if condition is None else " when " + json.dumps(instance.resolve(stack, condition), sort_keys=True)
    effect = "" if statement["Effect"] == "Allow" else f"{statement['Effect'].upper()} "
    for action in _listed(statement["Action"]):
        for resource in _listed(statement["Resource"]):
            yield Grant(principal, effect + action, _stable(str(instance.resolve(stack, resource))) + when)


def matrix(synthesized: Any) -> tuple[list[Grant], dict[str, str]]:
    """Every grant of the instance, sorted; and each principal's kind (``role`` or ``managed policy``)."""
    instance = _Instance(synthesized)
    grants: set[Grant] = set()
    kinds: dict[str, str] = {}
    for stack, logical_id, resource in instance.resources():
        kind, properties = resource["Type"], resource.get("Properties", {})
        if kind == "AWS::IAM::Role":
            principal = f"{stack}/{_strip_hash(logical_id)}"
            if principal in kinds:
                raise AssertionError(f"two roles are named {principal}")
            kinds[principal] = "role"
            for statement in properties["AssumeRolePolicyDocument"]["Statement"]:
                who = statement.get("Principal", {})
                for principal_kind, values in ({"AWS": who} if who == "*" else who).items():
                    for value in _listed(values):
                        trusted = f"{principal_kind}:{instance.resolve(stack, value)}"
                        assumed = f"<assumed by> {' '.join(_listed(statement['Action']))}"
                        condition = statement.get("Condition")
                        when = "" if condition is None else " when " + json.dumps(instance.resolve(stack, condition))
                        grants.add(Grant(principal, assumed, trusted + when))
            for arn in properties.get("ManagedPolicyArns", []):
                grants.add(Grant(principal, "<managed policy>", str(instance.resolve(stack, arn))))
            for policy in properties.get("Policies", []):
                for statement in policy["PolicyDocument"]["Statement"]:
                    grants.update(_statement_grants(instance, stack, principal, statement))
        elif kind == "AWS::IAM::ManagedPolicy":
            principal = f"{stack}/{_strip_hash(logical_id)}"
            kinds[principal] = "managed policy"
            attached = [*properties.get("Roles", []), *properties.get("Users", []), *properties.get("Groups", [])]
            if attached:
                raise AssertionError(f"{principal} is attached in the template, which the matrix does not read")
            for statement in properties["PolicyDocument"]["Statement"]:
                grants.update(_statement_grants(instance, stack, principal, statement))
    for stack, _, resource in instance.resources():
        if resource["Type"] != "AWS::IAM::Policy":
            continue
        properties = resource["Properties"]
        if properties.get("Users") or properties.get("Groups"):
            raise AssertionError(f"a policy in {stack} is attached to users or groups, which the matrix does not read")
        for role in properties["Roles"]:
            principal = instance.role_name(stack, role)
            if kinds.get(principal) != "role":
                raise AssertionError(
                    f"a policy in {stack} is attached to {principal}, which is no role of the instance"
                )
            for statement in properties["PolicyDocument"]["Statement"]:
                grants.update(_statement_grants(instance, stack, principal, statement))
    return sorted(grants), kinds


def _text(grants: list[Grant]) -> str:
    return HEADER + "".join(grant.line() + "\n" for grant in grants)


def _approved_lines() -> list[str]:
    if not APPROVED.exists():
        return []
    return [line for line in APPROVED.read_text(encoding="utf-8").splitlines() if not line.startswith("#")]


@pytest.fixture(scope="module")
def computed(synthesized: Any) -> tuple[list[Grant], dict[str, str]]:
    return matrix(synthesized)


def should_match_the_approved_role_action_resource_matrix(
    computed: tuple[list[Grant], dict[str, str]], reliability: Reliability
) -> None:
    # Given every grant of the example instance
    grants, kinds = computed
    if UPDATE:
        APPROVED.parent.mkdir(parents=True, exist_ok=True)
        APPROVED.write_text(_text(grants), encoding="utf-8")

    # When it is compared with the approved matrix
    actual = [grant.line() for grant in grants]
    approved = _approved_lines()
    drift = list(difflib.unified_diff(approved, actual, "approved", "synthesized", lineterm="", n=0))
    changed = [line for line in drift if line[:1] in "+-" and not line.startswith(("+++", "---"))]

    # Then they are the same
    reliability.record(
        "G2",
        case="golden role x action x resource matrix",
        roles=sum(kind == "role" for kind in kinds.values()),
        managed_policies=sum(kind == "managed policy" for kind in kinds.values()),
        grants=len(grants),
        drift=len(changed),
    )
    assert APPROVED.exists(), f"no approved matrix at {APPROVED}: run with SLEEPER_UPDATE_APPROVALS=1"
    assert changed == [], (
        f"the IAM matrix differs from {APPROVED} in {len(changed)} lines "
        "(- approved, + synthesized); if intended, regenerate with SLEEPER_UPDATE_APPROVALS=1 and review:\n"
        + "\n".join(drift)
    )


def should_grant_no_wildcard_action(computed: tuple[list[Grant], dict[str, str]], reliability: Reliability) -> None:
    # Given every action granted (the pseudo actions for trust and attached AWS managed policies left out)
    grants, _ = computed
    actions = {grant.action.removeprefix("DENY ") for grant in grants if not grant.action.startswith("<")}

    # When those that are "*" or a whole service's, and those with a "*" in them, are collected
    whole = sorted(a for a in actions if a == "*" or re.fullmatch(r"[\w-]+:\*", a))
    partial = sorted(a for a in actions if "*" in a and a not in whole)

    # Then there are none of the first, and the others are acknowledged
    reliability.record(
        "G2",
        case="matrix: no '*' or 'service:*' action",
        actions=len(actions),
        whole_service_wildcards=len(whole),
        other_wildcards=partial,
    )
    assert len(actions) > 100
    assert whole == []
    assert set(partial) <= set(ACKNOWLEDGED_WILDCARDS), partial


def should_let_only_the_garbage_collector_delete_data_files(
    computed: tuple[list[Grant], dict[str, str]], reliability: Reliability
) -> None:
    # Given every S3 delete granted
    grants, kinds = computed
    deletes = {(g.principal, g.resource) for g in grants if S3_DELETE.match(g.action)}

    # When those covering a data file, and those anywhere in the data bucket, are collected
    data_file_deleters = {who for who, resource in deletes if fnmatch.fnmatchcase(A_DATA_FILE, resource)}
    in_data_bucket = {(who, r) for who, r in deletes if r == DATA_BUCKET or r.startswith(f"{DATA_BUCKET}/")}
    roles_deleting_data_files = {who for who in data_file_deleters if kinds[who] == "role"}

    # Then only the garbage collector's role (and the admin policy for table deletion) may delete data files, the
    # garbage collector only in the data bucket, and every other delete is one listed with its reason
    reliability.record(
        "G2",
        case="matrix: who may delete, and where",
        s3_delete_grants=len(deletes),
        data_bucket_delete_grants=len(in_data_bucket),
        data_file_deleters=sorted(data_file_deleters),
        roles_deleting_data_files=len(roles_deleting_data_files),
        unlisted_deletes=len(deletes - set(DELETES)),
    )
    assert data_file_deleters == set(DATA_FILE_DELETERS)
    assert roles_deleting_data_files == {GARBAGE_COLLECTOR}
    assert {r for who, r in deletes if who == GARBAGE_COLLECTOR} == {f"{DATA_BUCKET}/*/data/*"}
    assert not any(r in ("*", f"{DATA_BUCKET}/*") for _, r in deletes)
    assert sorted(deletes - set(DELETES)) == [], "a delete no one listed in DELETES (with its reason)"
    assert sorted(set(DELETES) - deletes) == [], "a delete listed in DELETES that is no longer granted"


def should_let_each_function_receive_only_from_its_own_queue(
    computed: tuple[list[Grant], dict[str, str]], reliability: Reliability
) -> None:
    # Given which role receives from which queue (the admin policy may drain any, for dead letters)
    grants, kinds = computed
    receives = {
        (g.principal, g.resource) for g in grants if g.action == "sqs:ReceiveMessage" and kinds[g.principal] == "role"
    }

    # When the queues are taken by role, and those in another stack than the role's are collected
    queues_of: dict[str, set[str]] = {}
    for role, queue in receives:
        queues_of.setdefault(role, set()).add(queue)
    elsewhere = sorted(
        (role, queue) for role, queue in receives if not queue.startswith("${" + role.split("/", 1)[0] + "/")
    )

    # Then each role receives from one queue, of its own stack
    reliability.record(
        "G2",
        case="matrix: each function receives only from its own queue",
        consuming_roles=len(queues_of),
        roles_receiving_from_several_queues=sum(len(q) > 1 for q in queues_of.values()),
        receives_from_another_stack=len(elsewhere),
    )
    assert len(queues_of) > 15
    assert {role: sorted(q) for role, q in queues_of.items() if len(q) > 1} == {}
    assert elsewhere == []


DATA_FILE_READERS = {
    "ManagedPolicies/DirectQueryPolicy": "queries run in the user's own process read the data files and apply the "
    "table's rules there, so it sees every stored row: for principals cleared to see all of the instance's data",
    "ManagedPolicies/AdminPolicy": "table deletion and reinitialisation; an admin may change any table's rules anyway",
}
"""The instance's managed policies (for users' own roles) that may read data files, and why; the query, ingest and
other policies query only through the instance's functions, which apply the tables' rules."""

CALLED_VIA_ATHENA = ' when {"ForAnyValue:StringEquals": {"aws:CalledVia": ["athena.amazonaws.com"]}}'


def should_let_only_the_listed_user_policies_read_data_files(computed: tuple[list[Grant], dict[str, str]]) -> None:
    # Given every managed policy of the instance (what users attach to their own roles)
    grants, kinds = computed
    policies = {who for who, kind in kinds.items() if kind == "managed policy"}
    # When those that may read a data file are collected
    readers = {
        g.principal
        for g in grants
        if g.principal in policies and g.action == "s3:GetObject" and fnmatch.fnmatchcase(A_DATA_FILE, g.resource)
    }
    # Then they are the direct query and admin policies, each with its reason; the query policy is not among them
    assert readers == set(DATA_FILE_READERS)
    assert "ManagedPolicies/QueryPolicy" in policies


def should_let_users_invoke_the_athena_connectors_only_through_athena(
    computed: tuple[list[Grant], dict[str, str]],
) -> None:
    # Given every grant to invoke a function
    grants, _ = computed
    invokes = [g for g in grants if g.action == "lambda:InvokeFunction" and g.resource.startswith("${Athena/")]
    # When those on the Athena connectors are read
    principals = {g.principal for g in invokes}
    # Then only the query policy has them, both connectors, and only when Athena makes the call: no role or policy
    # may invoke a connector directly with a request (and an identity in it) of its own
    assert principals == {"ManagedPolicies/QueryPolicy"}
    assert {g.resource.split(" when ")[0] for g in invokes} == {
        "${Athena/SimpleConnector.Arn}",
        "${Athena/IteratorApplyingConnector.Arn}",
    }
    assert all(g.resource.endswith(CALLED_VIA_ATHENA) for g in invokes), [g.line() for g in invokes]
