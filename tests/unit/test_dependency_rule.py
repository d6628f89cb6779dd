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

EMULATOR_MAY_IMPORT = ("sleeper.core", "sleeper.adapters.aws", "sleeper.runtime.aws", "sleeper.emulator")
"""What the emulated AWS instance (``sleeper.emulator``) builds on."""


def _within(name: str, packages: tuple[str, ...]) -> bool:
    return any(name == package or name.startswith(package + ".") for package in packages)


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
            if area == "sleeper.adapters" and target in ("sleeper.runtime", "sleeper.cli", "sleeper.emulator"):
                problems.append(f"{module} imports {imported}: adapters never import the runtime or the CLI")
            if area == "sleeper.emulator" and top == "sleeper" and not _within(imported, EMULATOR_MAY_IMPORT):
                problems.append(
                    f"{module} imports {imported}: the emulator imports only core, the AWS adapters and the AWS runtime"
                )
            if target == "sleeper.emulator" and area not in ("sleeper.emulator", "sleeper.cli"):
                problems.append(f"{module} imports {imported}: only the CLI imports the emulator")
            if top == "lambdas":
                problems.append(
                    f"{module} imports {imported}: handlers are loaded by their registry name, not imported"
                )
        if not module.startswith(("sleeper.runtime", "sleeper.cli", "sleeper.emulator")):
            text = path.read_text()
            if "os.environ" in text or "os.getenv" in text:
                problems.append(f"{module} reads the environment: only sleeper.runtime, the emulator and the CLI may")
    return problems


def _stack_violations() -> list[str]:
    """The CDK stacks and app import only ``sleeper.core`` of the package (its registry of operations and naming)."""
    problems = []
    for path in [*sorted((ROOT / "stacks").glob("*.py")), ROOT / "app.py"]:
        for imported in _imports(path):
            if _top(imported) == "sleeper" and _sub(imported) != "sleeper.core":
                problems.append(f"{path.relative_to(ROOT)} imports {imported}: stacks import only sleeper.core")
    return problems


def _import_path_edits() -> list[str]:
    """Uses of ``sys.path`` in the code that is deployed or run (the package, the handlers, the stacks, the
    containers): each finds its modules as installed, as Lambda and the containers do."""
    paths = [ROOT / "app.py"]
    for folder in ("sleeper", "lambdas", "stacks", "containers"):
        paths.extend(sorted((ROOT / folder).rglob("*.py")))
    problems = []
    for path in paths:
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            uses_path = (
                isinstance(node, ast.Attribute)
                and node.attr == "path"
                and isinstance(node.value, ast.Name)
                and node.value.id == "sys"
            ) or (
                isinstance(node, ast.ImportFrom) and node.module == "sys" and any(a.name == "path" for a in node.names)
            )
            if uses_path:
                problems.append(f"{path.relative_to(ROOT)}:{getattr(node, 'lineno', 0)} uses sys.path")
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


def should_find_modules_as_installed_without_editing_the_import_path() -> None:
    # Given the package, the handlers, the stacks and the containers' scripts
    # When they are searched for uses of sys.path
    problems = _import_path_edits()
    # Then there are none
    assert problems == []


def should_detect_violations_of_the_emulator_boundary(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Given a runtime module importing the emulator, and an emulator module importing the local runtime and a handler
    for folder, name, text in (
        ("runtime", "router.py", "from sleeper.emulator.pump import Pump\n"),
        ("emulator", "bad.py", "import sleeper.runtime.local\nfrom lambdas._common import use_instance\n"),
        ("emulator", "good.py", "from sleeper.runtime.aws import AwsInstance\nfrom sleeper.adapters.aws import x\n"),
        ("cli", "aws_local.py", "from sleeper.emulator.instance import serve\n"),
    ):
        (tmp_path / "sleeper" / folder).mkdir(parents=True, exist_ok=True)
        (tmp_path / "sleeper" / folder / name).write_text(text)
    monkeypatch.setattr(sys.modules[__name__], "PACKAGE", tmp_path / "sleeper")
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    # When checked
    problems = _violations()
    # Then the emulator's imports beyond core and the AWS runtime and adapters, and the runtime's of it, are reported
    assert problems == [
        "sleeper.emulator.bad imports sleeper.runtime.local: the emulator imports only core, the AWS adapters and the "
        "AWS runtime",
        "sleeper.emulator.bad imports lambdas._common: handlers are loaded by their registry name, not imported",
        "sleeper.runtime.router imports sleeper.emulator.pump: only the CLI imports the emulator",
    ]
