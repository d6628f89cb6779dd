"""Every defined property is read by the code or says it is not used.

The code (``sleeper/``, the handlers in ``sleeper/lambdas/`` and the CDK stacks and app in ``sleeper/cdk/`` among it;
not the tests, and not the modules that define the properties) reads a property when it names it: by its definition
constant, imported from its module or reached through the module (``ic.COMPACTION_TASK_WAIT_TIME_IN_SECONDS``), or
by its name as a string, including strings built from constants (``prefix + "add.transaction.max.attempts"``). A
property another property falls back to is read when that one is. A property nothing reads must carry ``not_used=`` on
its definition, so the docs say so and setting it warns.
"""

from __future__ import annotations

import ast
import importlib
from collections.abc import Iterable
from pathlib import Path

import pytest

from sleeper.core import operation_wiring, operations
from sleeper.core.faces import face_names
from sleeper.core.properties import INSTANCE_PROPERTY_INDEX, TABLE_PROPERTY_INDEX
from sleeper.core.properties.definitions import PropertyDefinition

ROOT = Path(__file__).resolve().parents[3]
CODE = ("sleeper",)
DEFINITION_MODULES = (
    "instance_bulk",
    "instance_cdk",
    "instance_common",
    "instance_compaction",
    "instance_defaults",
    "instance_eks",
    "instance_ingest",
    "instance_query",
    "table",
)
NOT_READING = {*DEFINITION_MODULES, "index", "docs", "__init__", "definitions", "notices"}
"""Modules of ``sleeper.core.properties`` whose mentions of a property are not reads: the definitions themselves, the
index of them, the docs generator and the notices drawn from the definitions."""

IN_PROGRESS: set[str] = set()
"""Properties other work in progress is wiring: the test lets them pass unread and unmarked until it lands."""

ALL = [*INSTANCE_PROPERTY_INDEX, *TABLE_PROPERTY_INDEX]
NAMES = {d.name for d in ALL}
MODULE_NAMES = {".".join(p.relative_to(ROOT).with_suffix("").parts) for p in (ROOT / "sleeper").rglob("*.py")}
"""The package's module names: a string naming one (``"sleeper.cdk.app"``, the CDK app ``cdk`` runs) is not a read
of the property spelt the same (``sleeper.cdk.app``, Sleeper's record of which CDK app deployed an instance)."""


FACE = face_names("sleeper.core.properties", ROOT / "sleeper" / "core" / "properties" / "__init__.py")
"""The names the package's face offers, with the module each comes from."""


def _constants() -> dict[str, dict[str, PropertyDefinition]]:
    by_module: dict[str, dict[str, PropertyDefinition]] = {}
    for module_name in DEFINITION_MODULES:
        module = importlib.import_module(f"sleeper.core.properties.{module_name}")
        by_module[module_name] = {k: v for k, v in vars(module).items() if isinstance(v, PropertyDefinition)}
    return by_module


def _text(node: ast.AST, strings: dict[str, str]) -> str | None:
    """The string a node evaluates to when it is built only from literals and names bound to literals."""
    if isinstance(node, ast.Constant):
        return node.value if isinstance(node.value, str) else None
    if isinstance(node, ast.Name):
        return strings.get(node.id)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = _text(node.left, strings), _text(node.right, strings)
        return None if left is None or right is None else left + right
    if isinstance(node, ast.JoinedStr):
        parts = [_text(v.value if isinstance(v, ast.FormattedValue) else v, strings) for v in node.values]
        return None if any(p is None for p in parts) else "".join(p for p in parts if p is not None)
    return None


def _code_files() -> Iterable[Path]:
    for directory in CODE:
        for path in sorted((ROOT / directory).rglob("*.py")):
            relative = path.relative_to(ROOT)
            if relative.parts[:3] == ("sleeper", "core", "properties") and path.stem in NOT_READING:
                continue
            yield path


def _reads_in(path: Path, constants: dict[str, dict[str, PropertyDefinition]]) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    strings = {
        node.targets[0].id: node.value.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Assign)
        and len(node.targets) == 1
        and isinstance(node.targets[0], ast.Name)
        and isinstance(node.value, ast.Constant)
        and isinstance(node.value.value, str)
    }
    found: set[str] = set()
    aliases: dict[str, str] = {}
    for node in ast.walk(tree):
        text = _text(node, strings) if isinstance(node, ast.Constant | ast.BinOp | ast.JoinedStr) else None
        if text in NAMES and text not in MODULE_NAMES:
            found.add(text)
        if isinstance(node, ast.ImportFrom) and node.module:
            if node.module.startswith("sleeper.core.properties."):
                module_constants = constants.get(node.module.rsplit(".", 1)[1], {})
                found.update(module_constants[a.name].name for a in node.names if a.name in module_constants)
            elif node.module == "sleeper.core.properties":
                aliases.update({a.asname or a.name: a.name for a in node.names if a.name in constants})
                for a in node.names:  # a constant imported from the package's face, read from its module
                    module_name = FACE.get(a.name, ("", ""))[0].rsplit(".", 1)[-1]
                    definition = constants.get(module_name, {}).get(FACE[a.name][1]) if a.name in FACE else None
                    if definition is not None:
                        found.add(definition.name)
        elif isinstance(node, ast.Import):
            for a in node.names:
                module_name = a.name.rsplit(".", 1)[-1]
                if a.name.startswith("sleeper.core.properties.") and a.asname and module_name in constants:
                    aliases[a.asname] = module_name
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in aliases:
            definition = constants[aliases[node.value.id]].get(node.attr)
            if definition is not None:
                found.add(definition.name)
    return found


def properties_read() -> set[str]:
    """The names of the properties the code reads, with those they fall back to."""
    constants = _constants()
    read: set[str] = set()
    for path in _code_files():
        read |= _reads_in(path, constants)
    for spec in operations.aws_queues():  # the stacks record each queue's ARN and dead letters beside its URL
        recorded = operation_wiring.queue_properties(spec)
        if recorded.url in read:
            read.update(p for p in (recorded.arn, recorded.dlq_url, recorded.dlq_arn) if p is not None)
    changed = True
    while changed:
        changed = False
        for definition in ALL:
            fallback = definition.default_property
            if definition.name in read and fallback is not None and fallback not in read:
                read.add(fallback)
                changed = True
    return read


@pytest.fixture(scope="module")
def read() -> frozenset[str]:
    """The properties the code reads, found once for the module's tests (a parse of every code file)."""
    return frozenset(properties_read())


def should_read_every_property_or_mark_it_not_used(read: frozenset[str]) -> None:
    # Given the properties the code reads
    # When the properties neither read nor marked not used are listed
    unaccounted = [d.name for d in ALL if d.name not in read and d.used and d.name not in IN_PROGRESS]
    # Then there are none: wire each, or give it not_used="why" on its definition
    assert unaccounted == [], "read by nothing and not marked not_used:\n" + "\n".join(unaccounted)


def should_not_mark_a_property_the_code_reads(read: frozenset[str]) -> None:
    # Given the properties the code reads
    # When the properties marked not used are compared with them
    stale = [d.name for d in ALL if not d.used and d.name in read]
    # Then none is both: a property that is read is used, so its mark must go
    assert stale == [], "marked not_used but read by the code:\n" + "\n".join(stale)


def should_find_reads_by_constant_by_module_by_face_and_by_built_name(tmp_path: Path) -> None:
    # Given code reading one property by constant, one through its module, one through the package's face and one
    # by a name built from a prefix
    source = tmp_path / "reader.py"
    source.write_text(
        "from sleeper.core.properties.instance_common import LOGGING_LEVEL\n"
        "from sleeper.core.properties import instance_query as iq\n"
        "from sleeper.core.properties import INGEST_JOB_WAIT_TIME_IN_SECONDS\n"
        "PREFIX = 'sleeper.table.statestore.transactionlog.'\n"
        "def f(p):\n"
        "    return p.get(iq.QUERY_TRACKER_ITEM_TTL_IN_DAYS), p.get(PREFIX + 'snapshot.expiry.days')\n",
        encoding="utf-8",
    )
    # When its reads are found
    found = _reads_in(source, _constants())
    # Then all four are
    assert found == {
        "sleeper.ingest.job.queue.wait.time",
        "sleeper.logging.level",
        "sleeper.query.tracker.ttl.days",
        "sleeper.table.statestore.transactionlog.snapshot.expiry.days",
    }
