"""The dependency rule of docs/design (ARCHITECTURE.md), checked on every import statement of the package."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "sleeper"

FEATURES = ("ingest", "compaction", "splitting", "gc", "query", "bulk_import", "athena", "batcher")


def _imports(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    out: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.append(node.module)
    return out


def _modules() -> list[tuple[str, Path]]:
    out = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(ROOT).with_suffix("")
        out.append((".".join(rel.parts), path))
    return out


def _top(name: str) -> str:
    return name.split(".")[0]


def _sub(name: str) -> str:
    parts = name.split(".")
    return ".".join(parts[:2]) if parts[0] == "sleeper" and len(parts) > 1 else parts[0]


STDLIB = set(sys.stdlib_module_names)


def _violations() -> list[str]:
    problems: list[str] = []
    for module, path in _modules():
        area = _sub(module)
        for imported in _imports(path):
            top = _top(imported)
            target = _sub(imported)
            if area == "sleeper.core" and top not in STDLIB and target != "sleeper.core":
                problems.append(f"{module} (core) imports {imported}: core is standard library only")
            if top in ("boto3", "botocore", "mypy_boto3_dynamodb", "mypy_boto3_s3", "mypy_boto3_sqs") and not (
                module.startswith("sleeper.adapters.aws")
            ):
                problems.append(f"{module} imports {imported}: only sleeper.adapters.aws may import boto3")
            if top == "sqlite3" and not module.startswith("sleeper.adapters.local"):
                problems.append(f"{module} imports sqlite3: only sleeper.adapters.local may")
            if (
                area in ("sleeper.io", "sleeper.sketches")
                and top == "sleeper"
                and target
                not in (
                    "sleeper.core",
                    "sleeper.io",
                    "sleeper.sketches",
                )
            ):
                problems.append(f"{module} imports {imported}: io and sketches import only core, io and sketches")
            if area.removeprefix("sleeper.") in FEATURES or area == "sleeper.statestore":
                if target in ("sleeper.adapters", "sleeper.runtime", "sleeper.cli"):
                    problems.append(f"{module} imports {imported}: feature packages never import adapters or runtime")
                own = area.removeprefix("sleeper.")
                other = target.removeprefix("sleeper.")
                if other in FEATURES and other != own:
                    problems.append(f"{module} imports {imported}: feature packages never import each other")
            if area == "sleeper.adapters" and target in ("sleeper.runtime", "sleeper.cli"):
                problems.append(f"{module} imports {imported}: adapters never import the runtime or the CLI")
        if not module.startswith(("sleeper.runtime", "sleeper.cli")):
            text = path.read_text()
            if "os.environ" in text or "os.getenv" in text:
                problems.append(f"{module} reads the environment: only sleeper.runtime and the CLI may")
    return problems


def _stack_violations() -> list[str]:
    """The CDK stacks and app import only ``sleeper.core`` of the package (its registry of operations and naming)."""
    problems = []
    for path in [*sorted((ROOT / "stacks").glob("*.py")), ROOT / "app.py"]:
        for imported in _imports(path):
            if _top(imported) == "sleeper" and _sub(imported) != "sleeper.core":
                problems.append(f"{path.relative_to(ROOT)} imports {imported}: stacks import only sleeper.core")
    return problems


def should_keep_the_stacks_to_core() -> None:
    # Given the CDK stacks and app
    # When their imports of the package are checked
    problems = _stack_violations()
    # Then each is of sleeper.core
    assert problems == []


def should_follow_the_dependency_rule() -> None:
    # Given every module of the package
    # When their imports are checked against the rule
    problems = _violations()
    # Then there are none
    assert problems == []


def should_detect_a_violation(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Given a core module that imports pyarrow
    fake = tmp_path / "sleeper" / "core"
    fake.mkdir(parents=True)
    (fake / "bad.py").write_text("import pyarrow\n")
    monkeypatch.setattr(sys.modules[__name__], "PACKAGE", tmp_path / "sleeper")
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    # When checked
    problems = _violations()
    # Then the import is reported
    assert problems == ["sleeper.core.bad (core) imports pyarrow: core is standard library only"]
