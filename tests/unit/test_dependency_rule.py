"""The dependency rule of docs/design.md, checked on every import statement of the package: what each package may
import, the layers of the package (no upward arrow) and no import circle."""

from __future__ import annotations

import ast
import functools
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "sleeper"

FEATURES = (
    "ingest",
    "compaction",
    "splitting",
    "gc",
    "query",
    "bulk_import",
    "bulk_export",
    "athena",
    "rest_api",
    "iceberg",
)
"""The feature packages (the ingest batcher is part of ingest: ``sleeper.ingest.batcher``)."""


@functools.cache
def _parse_text(text: str, filename: str) -> ast.Module:
    return ast.parse(text, filename=filename)


def _parse(path: Path) -> ast.Module:
    """A module's syntax tree, parsed once per content for the module's tests (several walk every module); the trees
    are only read."""
    return _parse_text(path.read_text(), str(path))


@pytest.fixture(autouse=True, scope="module")
def _forget_the_trees() -> Iterator[None]:
    """The trees of every module take memory for as long as the cache holds them: no longer than this test module."""
    yield
    _parse_text.cache_clear()


def _imports(path: Path) -> list[str]:
    tree = _parse(path)
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


ENVIRONMENT_READERS = (
    "sleeper.runtime",
    "sleeper.client",
    "sleeper.cli",
    "sleeper.emulator",
    "sleeper.lambdas",
    "sleeper.cdk.app",
)
"""The packages that may read the environment: the composition roots (the runtime, Sleeper's Python client, the
emulator, the CLI, the Lambda handlers and the CDK app, which reads the account and region the cdk command gives)."""

CDK_APP = "sleeper.cdk.app"
"""The CDK app calls AWS itself (``newInstance=true`` looks for the config bucket), as Sleeper's does: it imports
only ``sleeper.core`` of the package, so it may import boto3."""


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
                or (top != "boto3" and module.startswith("sleeper.emulator"))
                or module == CDK_APP
            ):
                problems.append(
                    f"{module} imports {imported}: only sleeper.adapters.aws may import boto3 (the emulator its errors)"
                )
            if top == "sqlite3" and not module.startswith("sleeper.adapters.local"):
                problems.append(f"{module} imports sqlite3: only sleeper.adapters.local may")
            if area == "sleeper.io" and top == "sleeper" and target not in ("sleeper.core", "sleeper.io"):
                problems.append(f"{module} imports {imported}: io imports only core and io")
            if area.removeprefix("sleeper.") in FEATURES or area == "sleeper.statestore":
                if target in ("sleeper.adapters", "sleeper.runtime", "sleeper.cli"):
                    problems.append(f"{module} imports {imported}: feature packages never import adapters or runtime")
                own = area.removeprefix("sleeper.")
                other = target.removeprefix("sleeper.")
                if other in FEATURES and other != own:
                    problems.append(f"{module} imports {imported}: feature packages never import each other")
            if area == "sleeper.api" and target in (
                "sleeper.adapters",
                "sleeper.runtime",
                "sleeper.cli",
                "sleeper.emulator",
                "sleeper.client",
            ):
                problems.append(f"{module} imports {imported}: the user API never imports the runtimes or adapters")
            if area == "sleeper.adapters" and target in ("sleeper.runtime", "sleeper.cli", "sleeper.emulator"):
                problems.append(f"{module} imports {imported}: adapters never import the runtime or the CLI")
            if area == "sleeper.emulator" and top == "sleeper" and not _within(imported, EMULATOR_MAY_IMPORT):
                problems.append(
                    f"{module} imports {imported}: the emulator imports only core, the AWS adapters and the AWS runtime"
                )
            if target == "sleeper.emulator" and area not in ("sleeper.emulator", "sleeper.cli"):
                problems.append(f"{module} imports {imported}: only the CLI imports the emulator")
            if target == "sleeper.lambdas" and area != "sleeper.lambdas":
                problems.append(
                    f"{module} imports {imported}: handlers are loaded by their registry name, not imported"
                )
            if area == "sleeper.client" and target in ("sleeper.cli", "sleeper.emulator"):
                problems.append(f"{module} imports {imported}: the client never imports the CLI or the emulator")
            if target == "sleeper.client" and area not in ("sleeper.client", "sleeper.cli"):
                problems.append(f"{module} imports {imported}: only the CLI imports the client")
        if not _within(module, ENVIRONMENT_READERS):
            text = path.read_text()
            if "os.environ" in text or "os.getenv" in text:
                problems.append(f"{module} reads the environment: only the composition roots may")
    return problems


CDK = "sleeper.cdk"
"""The CDK app and stacks (the ``cdk`` extra): they import only ``sleeper.core`` of the package, and only they import
``aws_cdk``, ``constructs`` and ``cdk_nag``, so importing the rest of the package never needs them."""

CDK_LIBRARIES = ("aws_cdk", "constructs", "cdk_nag")


def _stack_violations() -> list[str]:
    """The CDK stacks and app (``sleeper/cdk/``) import only ``sleeper.core`` and themselves of the package (its
    registry of operations, naming and properties); the checkout's ``app.py`` shim imports only the app."""
    problems = []
    for path in sorted((ROOT / "sleeper" / "cdk").rglob("*.py")):
        for node in _all_import_nodes(path):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else [str(node.module)]
            for imported in names:
                if _top(imported) == "sleeper" and _sub(imported) not in ("sleeper.core", CDK):
                    problems.append(f"{path.relative_to(ROOT)} imports {imported}: stacks import only sleeper.core")
    shim = ROOT / "app.py"
    if shim.is_file():
        for imported in _imports(shim):
            if _top(imported) == "sleeper" and imported != f"{CDK}.app":
                problems.append(f"app.py imports {imported}: it only runs sleeper.cdk.app")
    return problems


def _cdk_library_imports() -> list[str]:
    """Imports of the CDK libraries outside ``sleeper.cdk`` (every import: at run time, in functions, type-only)."""
    problems = []
    for module, path in _package_modules().items():
        if _within(module, (CDK,)):
            continue
        for node in _all_import_nodes(path):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else [str(node.module)]
            for imported in names:
                if _top(imported) in CDK_LIBRARIES or _within(imported, (CDK,)):
                    problems.append(f"{module} imports {imported}: only sleeper.cdk needs the cdk extra")
    return sorted(problems)


def _import_path_edits() -> list[str]:
    """Uses of ``sys.path`` in the code that is deployed or run (the package, the handlers, the stacks, the
    containers): each finds its modules as installed, as Lambda and the containers do."""
    paths = [ROOT / "app.py"]
    for folder in ("sleeper", "containers"):
        paths.extend(sorted((ROOT / folder).rglob("*.py")))
    problems = []
    for path in paths:
        for node in ast.walk(_parse(path)):
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
    # Then each is of sleeper.core (or of sleeper.cdk itself)
    assert problems == []


def should_need_the_cdk_extra_only_in_sleeper_cdk() -> None:
    # Given every module of the package but sleeper.cdk
    # When their imports are checked
    problems = _cdk_library_imports()
    # Then none imports aws_cdk, constructs, cdk_nag or sleeper.cdk
    assert problems == []


def should_detect_a_stack_importing_beyond_core(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Given a stack importing the AWS runtime inside a function, a stack importing core and another stack, and a
    # feature importing the stacks and aws_cdk
    for folder, name, text in (
        ("cdk", "bad.py", "def f():\n    from sleeper.runtime.aws import AwsInstance\n"),
        ("cdk", "good.py", "from sleeper.core import naming\nfrom sleeper.cdk.context import DeployContext\n"),
        ("gc", "bad.py", "import aws_cdk as cdk\nfrom sleeper.cdk import SleeperInstance\n"),
    ):
        (tmp_path / "sleeper" / folder).mkdir(parents=True, exist_ok=True)
        (tmp_path / "sleeper" / folder / name).write_text(text)
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    # When checked
    problems = _stack_violations() + _cdk_library_imports()
    # Then the stack's import of the runtime and the feature's imports are reported
    assert problems == [
        "sleeper/cdk/bad.py imports sleeper.runtime.aws: stacks import only sleeper.core",
        "sleeper.gc.bad imports aws_cdk: only sleeper.cdk needs the cdk extra",
        "sleeper.gc.bad imports sleeper.cdk: only sleeper.cdk needs the cdk extra",
    ]


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
        ("emulator", "bad.py", "import sleeper.runtime.local\nfrom sleeper.lambdas._common import use_instance\n"),
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
        "sleeper.emulator.bad imports sleeper.lambdas._common: the emulator imports only core, the AWS adapters and "
        "the AWS runtime",
        "sleeper.emulator.bad imports sleeper.lambdas._common: handlers are loaded by their registry name, not "
        "imported",
        "sleeper.runtime.router imports sleeper.emulator.pump: only the CLI imports the emulator",
    ]


RUNTIMES = {"aws": "sleeper.runtime.aws", "local": "sleeper.runtime.local"}
"""The two runtimes, by the name prefix of their modules (``runtime/aws*.py``, ``runtime/local*.py`` or a
``runtime/aws/`` package); neither imports the other."""

LAMBDAS_MAY_NOT_IMPORT = ("sleeper.adapters", "sleeper.cli", "sleeper.emulator", "sleeper.runtime.local")
"""Handlers build on the AWS runtime and the feature entry points, never on adapters, the CLI or the local runtime."""


def _all_modules() -> dict[str, Path]:
    """Every module of the package and the handlers, by dotted name (a package by its own name)."""
    out: dict[str, Path] = {}
    for path in sorted((ROOT / "sleeper").rglob("*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return out


def _type_only_nodes(tree: ast.Module) -> set[int]:
    """The nodes under ``if TYPE_CHECKING:``: imports for type checkers only, never made when the code runs."""
    type_only: set[int] = set()
    for node in ast.walk(tree):
        test = node.test if isinstance(node, ast.If) else None
        if (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
            isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
        ):
            type_only.update(id(inner) for child in node.body for inner in ast.walk(child))  # type: ignore[attr-defined]
    return type_only


def _runtime_import_nodes(path: Path) -> list[ast.Import | ast.ImportFrom]:
    """The absolute import statements a module makes when it runs: at the top or inside functions."""
    tree = _parse(path)
    type_only = _type_only_nodes(tree)
    return [
        node
        for node in ast.walk(tree)
        if id(node) not in type_only
        and (isinstance(node, ast.Import) or (isinstance(node, ast.ImportFrom) and node.module and node.level == 0))
    ]


def _all_import_nodes(path: Path) -> list[ast.Import | ast.ImportFrom]:
    """Every absolute import statement of a module: at the top, inside functions and under ``if TYPE_CHECKING:``."""
    tree = _parse(path)
    return [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.Import) or (isinstance(node, ast.ImportFrom) and node.module and node.level == 0)
    ]


def _runtime_imports(path: Path, known: set[str], *, type_only: bool = False) -> set[str]:
    """The modules of ``known`` a module imports when it runs (with ``type_only``, for type checkers too)."""
    found: set[str] = set()
    for node in _all_import_nodes(path) if type_only else _runtime_import_nodes(path):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names if alias.name in known)
            continue
        for alias in node.names:
            submodule = f"{node.module}.{alias.name}"
            if submodule in known:
                found.add(submodule)
            elif node.module in known:
                found.add(str(node.module))
    return found


def _import_cycles(modules: dict[str, Path], *, type_only: bool = False) -> list[list[str]]:
    """The groups of modules that import each other, directly or through others (Tarjan's strongly connected
    components of the import graph, function-level imports included; with ``type_only``, the imports under
    ``if TYPE_CHECKING:`` too)."""
    known = set(modules)
    graph = {
        name: sorted(_runtime_imports(path, known, type_only=type_only) - {name}) for name, path in modules.items()
    }
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []

    def visit(start: str) -> None:
        # Iterative, so a long import chain cannot reach the recursion limit
        work = [(start, iter(graph[start]))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, targets = work[-1]
            advanced = False
            for target in targets:
                if target not in index:
                    index[target] = low[target] = len(index)
                    stack.append(target)
                    on_stack.add(target)
                    work.append((target, iter(graph[target])))
                    advanced = True
                    break
                if target in on_stack:
                    low[node] = min(low[node], index[target])
            if advanced:
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                group = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.append(member)
                    if member == node:
                        break
                if len(group) > 1:
                    cycles.append(sorted(group))

    for name in graph:
        if name not in index:
            visit(name)
    return sorted(cycles)


def _runtime_and_handler_violations() -> list[str]:
    """Imports between the two runtimes, and handlers importing what they must not (imports made when the code runs;
    type-only ones, such as a check that both admins fit one port, are allowed)."""
    problems = []
    modules = _all_modules()
    for module, path in modules.items():
        names = [
            name
            for node in _runtime_import_nodes(path)
            for name in ([a.name for a in node.names] if isinstance(node, ast.Import) else [str(node.module)])
        ]
        for imported in names:
            for runtime, prefix in RUNTIMES.items():
                other = next(p for r, p in RUNTIMES.items() if r != runtime)
                if module.startswith(prefix) and imported.startswith(other):
                    problems.append(f"{module} imports {imported}: the {runtime} runtime never imports the other")
            if _within(module, ("sleeper.lambdas",)) and _within(imported, LAMBDAS_MAY_NOT_IMPORT):
                problems.append(f"{module} imports {imported}: handlers use the AWS runtime and feature entry points")
    return sorted(problems)


def should_have_no_import_cycles() -> None:
    # Given every module of the package and the handlers, with the imports they make at run time
    # When the import graph is searched for cycles
    cycles = _import_cycles(_all_modules())
    # Then there are none
    assert cycles == []


KNOWN_CIRCLES: tuple[tuple[str, ...], ...] = ()
"""Import circles of the package known and being removed; a new one fails the check, and so does one of these once
it is gone (remove it from here then)."""


def _package_modules() -> dict[str, Path]:
    return {name: path for name, path in _all_modules().items() if _top(name) == "sleeper"}


def should_have_no_import_circle_between_modules_of_the_package() -> None:
    # Given every module of the package, with every import it makes: at run time, inside functions and for type
    # checkers only
    # When the import graph is searched for circles
    cycles = _import_cycles(_package_modules(), type_only=True)
    # Then there are none but the known ones
    assert cycles == [list(circle) for circle in KNOWN_CIRCLES]


def should_detect_a_type_only_import_circle(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Given two modules of the package that import each other, one of them only for type checkers
    package = tmp_path / "sleeper" / "feature"
    package.mkdir(parents=True)
    (tmp_path / "sleeper" / "lambdas").mkdir(parents=True, exist_ok=True)
    (package / "errors.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from sleeper.feature.model import Thing\n"
    )
    (package / "model.py").write_text("from sleeper.feature.errors import ThingError\n")
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    # When checked with type-only imports, and without
    with_type_only = _import_cycles(_package_modules(), type_only=True)
    at_run_time = _import_cycles(_package_modules())
    # Then the circle is found only when type-only imports count
    assert with_type_only == [["sleeper.feature.errors", "sleeper.feature.model"]]
    assert at_run_time == []


LAYERS: tuple[tuple[str, ...], ...] = (
    ("sleeper.core",),
    ("sleeper.io",),
    ("sleeper.statestore", "sleeper.iterators"),
    tuple(f"sleeper.{feature}" for feature in FEATURES),
    ("sleeper.api", "sleeper.adapters"),
    ("sleeper.runtime",),
    ("sleeper.cli", "sleeper.emulator", "sleeper.client", "sleeper.spark", "sleeper.lambdas", "sleeper.cdk"),
    ("sleeper", "sleeper.exceptions"),
)
"""The layers of the package, lowest first: a package imports only packages of its own layer or below (what a
package may import of its own layer, the rules above say: features never import each other, only the CLI imports
the emulator and the client). The Spark source (``sleeper.spark``) opens instances as the CLI does, so it sits beside
the CLI, and so do the Lambda handlers (``sleeper.lambdas``), which build the AWS instance, and the CDK app and
stacks (``sleeper.cdk``), which import only core (``_stack_violations``). The package's faces
(``sleeper`` and ``sleeper.exceptions``) are the top."""


def _layer_of(package: str) -> int | None:
    return next((i for i, layer in enumerate(LAYERS) if package in layer), None)


def _package_of(module: str) -> str:
    """The package of the layering a module or imported name belongs to (``sleeper`` for the package itself)."""
    return "sleeper" if module == "sleeper" else _sub(module)


def _upward_arrows() -> list[str]:
    """Each import of a package of a higher layer, and each package of no layer (every import counted: at run time,
    inside functions and for type checkers only)."""
    problems = []
    for module, path in _package_modules().items():
        area = _package_of(module)
        layer = _layer_of(area)
        if layer is None:
            problems.append(f"{module}: {area} is in no layer (add it to LAYERS)")
            continue
        for node in _all_import_nodes(path):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else [str(node.module)]
            for imported in names:
                if _top(imported) != "sleeper":
                    continue
                target = _package_of(imported)
                target_layer = _layer_of(target)
                if target_layer is not None and target_layer > layer:
                    problems.append(f"{module} imports {imported}: {area} is below {target}")
    return sorted(problems)


def should_have_no_upward_arrow_between_packages() -> None:
    # Given every module of the package and the layers (core, io, state store and iterators, features, the user API
    # and the adapters, the runtimes, the CLI, emulator and client, the package's faces)
    # When each import is checked against them
    problems = _upward_arrows()
    # Then no package imports one of a higher layer, and every package has a layer
    assert problems == []


def should_detect_an_upward_arrow_and_a_package_of_no_layer(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Given io importing the state store only for type checkers, a feature importing the runtime inside a function,
    # the runtime importing a feature, and a package of no layer
    for folder, name, text in (
        ("io", "bad.py", "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from sleeper.statestore import x\n"),
        ("gc", "bad.py", "def f():\n    import sleeper.runtime.local.api\n"),
        ("runtime", "good.py", "from sleeper.gc.collector import run_garbage_collection\n"),
        ("misc", "new.py", "import json\n"),
    ):
        (tmp_path / "sleeper" / folder).mkdir(parents=True, exist_ok=True)
        (tmp_path / "sleeper" / folder / name).write_text(text)
    (tmp_path / "sleeper" / "lambdas").mkdir(parents=True, exist_ok=True)
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    # When checked
    problems = _upward_arrows()
    # Then the two upward imports and the package of no layer are reported, the downward import is not
    assert problems == [
        "sleeper.gc.bad imports sleeper.runtime.local.api: sleeper.gc is below sleeper.runtime",
        "sleeper.io.bad imports sleeper.statestore: sleeper.io is below sleeper.statestore",
        "sleeper.misc.new: sleeper.misc is in no layer (add it to LAYERS)",
    ]


def should_detect_an_import_cycle_through_a_function_level_import(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given three modules importing each other in a ring, one of them inside a function, and a type-only import back
    package = tmp_path / "sleeper" / "runtime"
    package.mkdir(parents=True)
    (tmp_path / "sleeper" / "lambdas").mkdir(parents=True, exist_ok=True)
    (package / "a.py").write_text("from sleeper.runtime.b import x\n")
    (package / "b.py").write_text("import sleeper.runtime.c\n")
    (package / "c.py").write_text("def f():\n    from sleeper.runtime import a\n")
    (package / "d.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from sleeper.runtime.a import y\n"
        "from sleeper.runtime.a import z\n"
    )
    (package / "e.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import sleeper.runtime.e2\n"
    )
    (package / "e2.py").write_text("import sleeper.runtime.e\n")
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    # When checked
    cycles = _import_cycles(_all_modules())
    # Then the ring is reported, and neither the one-way import nor the type-only one is
    assert cycles == [["sleeper.runtime.a", "sleeper.runtime.b", "sleeper.runtime.c"]]


def should_keep_the_runtimes_apart_and_the_handlers_thin() -> None:
    # Given every module of the package and the handlers
    # When their imports are checked
    problems = _runtime_and_handler_violations()
    # Then neither runtime imports the other and no handler imports adapters, the CLI or the local runtime
    assert problems == []


def should_detect_a_runtime_importing_the_other(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Given the AWS runtime importing the local one, and a handler importing an adapter
    (tmp_path / "sleeper" / "runtime").mkdir(parents=True)
    (tmp_path / "sleeper" / "lambdas").mkdir(parents=True, exist_ok=True)
    (tmp_path / "sleeper" / "runtime" / "aws_admin.py").write_text("from sleeper.runtime.local import LocalInstance\n")
    (tmp_path / "sleeper" / "lambdas" / "gc.py").write_text("from sleeper.adapters.aws.clients import s3_client\n")
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    # When checked
    problems = _runtime_and_handler_violations()
    # Then both are reported
    assert problems == [
        "sleeper.lambdas.gc imports sleeper.adapters.aws.clients: handlers use the AWS runtime and feature entry "
        "points",
        "sleeper.runtime.aws_admin imports sleeper.runtime.local: the aws runtime never imports the other",
    ]


def should_detect_violations_of_the_client_boundary(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Given the client importing the CLI and reading the environment, and a feature and the runtime importing the
    # client
    for folder, name, text in (
        ("client", "bad.py", "import os\nfrom sleeper.cli.main import main\nURL = os.environ['X']\n"),
        ("query", "bad.py", "from sleeper.client import SleeperClient\n"),
        ("runtime", "bad.py", "import sleeper.client.query\n"),
        ("cli", "client.py", "from sleeper.client import SleeperClient\n"),
    ):
        (tmp_path / "sleeper" / folder).mkdir(parents=True, exist_ok=True)
        (tmp_path / "sleeper" / folder / name).write_text(text)
    monkeypatch.setattr(sys.modules[__name__], "PACKAGE", tmp_path / "sleeper")
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    # When checked
    problems = _violations()
    # Then the client's import of the CLI and the others' imports of the client are reported, its environment
    # reading is not (it is a composition root, as the runtime is)
    assert problems == [
        "sleeper.client.bad imports sleeper.cli.main: the client never imports the CLI or the emulator",
        "sleeper.query.bad imports sleeper.client: only the CLI imports the client",
        "sleeper.runtime.bad imports sleeper.client.query: only the CLI imports the client",
    ]
