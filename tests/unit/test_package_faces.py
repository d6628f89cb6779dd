"""Package faces (``sleeper.core.faces``): a module imports another package's names from that package's
``__init__``, never from one of its modules; every name a face offers is its module's object; importing a package
loads none of its modules until a name is used."""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
from pathlib import Path

import pytest

from sleeper.core.faces import face_names, lazy_face

ROOT = Path(__file__).resolve().parents[2]


def _area(module: str) -> str:
    """A module's package at the top of the package (``sleeper.core`` for ``sleeper.core.properties.table``)."""
    parts = module.split(".")
    return ".".join(parts[:2])


def _imports_past_faces(root: Path) -> list[str]:
    package_dir = root / "sleeper"
    packages = {".".join(p.parent.relative_to(root).parts) for p in package_dir.rglob("__init__.py")}
    problems = []
    for path in sorted(package_dir.rglob("*.py")):
        parts = path.relative_to(root).with_suffix("").parts
        module = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not (isinstance(node, ast.ImportFrom) and node.level == 0 and node.module):
                continue
            target = node.module
            if target.startswith("sleeper.") and _area(target) != _area(module) and target not in packages:
                problems.append(f"{module} imports from {target}: import from the package {target.rsplit('.', 1)[0]}")
    return problems


def _faces() -> list[tuple[str, Path]]:
    out = []
    for init in sorted((ROOT / "sleeper").rglob("__init__.py")):
        package = ".".join(init.parent.relative_to(ROOT).parts)
        if "lazy_face(__name__, __file__)" in init.read_text(encoding="utf-8"):
            out.append((package, init))
    return out


def should_import_other_packages_only_through_their_faces() -> None:
    # Given every module of the package
    # When their imports of other packages are checked
    problems = _imports_past_faces(ROOT)
    # Then each names a package, never one of its modules
    assert problems == []


def should_detect_an_import_past_a_face(tmp_path: Path) -> None:
    # Given a query module importing from io's face, from one of io's modules and from one of its own package's
    (tmp_path / "sleeper" / "io").mkdir(parents=True)
    (tmp_path / "sleeper" / "query").mkdir(parents=True)
    for package in ("sleeper", "sleeper/io", "sleeper/query"):
        (tmp_path / package / "__init__.py").write_text("")
    (tmp_path / "sleeper" / "query" / "reader.py").write_text(
        "from sleeper.io import SortedFileReader\n"
        "from sleeper.io.parquet import SortedFileWriter\n"
        "from sleeper.query.planner import plan_query\n"
    )
    # When checked
    problems = _imports_past_faces(tmp_path)
    # Then only the import from io's module is reported
    assert problems == ["sleeper.query.reader imports from sleeper.io.parquet: import from the package sleeper.io"]


@pytest.mark.parametrize(("package", "init"), [pytest.param(*face, id=face[0]) for face in _faces()])
def should_offer_on_each_face_the_objects_of_its_modules(package: str, init: Path) -> None:
    # Given a package's face
    face = importlib.import_module(package)
    # (none of its names is also the name of one of its modules, which importing would put in the name's place)
    submodules = {path.stem for path in init.parent.glob("*.py")} | {
        p.parent.name for p in init.parent.glob("*/__init__.py")
    }
    assert not set(face_names(package, init)) & submodules, f"{package} offers a name of one of its modules"
    # When each name it offers is used
    for name, (module, original) in face_names(package, init).items():
        # Then it is the object its module defines, and kept on the package
        assert getattr(face, name) is getattr(importlib.import_module(module), original), f"{package}.{name}"
        assert name in vars(face)
        assert name in dir(face)


def should_refuse_a_name_a_face_does_not_offer() -> None:
    # Given the io package's face
    face = importlib.import_module("sleeper.io")
    # When a name it does not offer is used
    # Then it is an AttributeError naming the package and the name, as for any module
    with pytest.raises(AttributeError, match="module 'sleeper.io' has no attribute 'NotOffered'"):
        face.NotOffered  # noqa: B018 - the attribute access is what is tested


def should_load_none_of_a_packages_modules_until_a_name_is_used() -> None:
    # Given a fresh Python process
    # When it imports the io and core packages, then uses one name of io's face
    script = (
        "import sys, sleeper.io, sleeper.core\n"
        "before = sorted(m for m in sys.modules if m.startswith('sleeper.io.'))\n"
        "from sleeper.io import SortedFileWriter\n"
        "print(before, 'sleeper.io.parquet' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    # Then no module of io was loaded by the import, and the name's module was when it was used
    assert done.stdout.strip() == "[] True"


def should_read_a_face_from_its_type_checking_imports(tmp_path: Path) -> None:
    # Given an __init__ offering names of its modules (one renamed, two in parentheses with a comment), importing
    # another package's name in the block and one of its own modules' after it
    init = tmp_path / "__init__.py"
    init.write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n"
        "    from pkg.a import One as One\n"
        "    from pkg.b import two as renamed\n"
        "    from pkg.c import (\n"
        "        A_VERY_LONG_NAME as A_VERY_LONG_NAME,  # noqa: E501\n"
        "        Four,\n"
        "    )\n"
        "    from other.c import Three\n"
        "\n"
        "__getattr__, __dir__ = lazy_face(__name__, __file__)\n"
        "from pkg.d import Five\n"
    )
    # When its face is read
    names = face_names("pkg", init)
    # Then it offers the names of its own modules in the block, each with where it comes from
    assert names == {
        "One": ("pkg.a", "One"),
        "renamed": ("pkg.b", "two"),
        "A_VERY_LONG_NAME": ("pkg.c", "A_VERY_LONG_NAME"),
        "Four": ("pkg.c", "Four"),
    }
    # And a lazy face over it refuses the other package's name
    getattr_, _ = lazy_face("pkg", str(init))
    with pytest.raises(AttributeError):
        getattr_("Three")


def _parsed_face(package: str, init: Path) -> dict[str, tuple[str, str]]:
    names = {}
    for node in ast.parse(init.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            for statement in node.body:
                if isinstance(statement, ast.ImportFrom) and (statement.module or "").startswith(package + "."):
                    names.update({a.asname or a.name: (statement.module or "", a.name) for a in statement.names})
    return names


def should_read_every_face_as_python_parses_it() -> None:
    # Given every package's __init__
    for init in sorted((ROOT / "sleeper").rglob("__init__.py")):
        package = ".".join(init.parent.relative_to(ROOT).parts)
        # When its face is read by the scan lazy_face uses
        # Then it offers exactly the names Python's parser finds in its TYPE_CHECKING blocks
        assert face_names(package, init) == _parsed_face(package, init), package
