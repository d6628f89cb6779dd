"""Package faces: a package's ``__init__`` names what other packages may import from it, and loads it when used.

A package's face lists, in an ``if TYPE_CHECKING:`` block of its ``__init__.py``, the names it offers from its own
modules (``from sleeper.io.parquet import SortedFileWriter as SortedFileWriter``), so type checkers, linters and
readers see them, and ends with::

    __getattr__, __dir__ = lazy_face(__name__, __file__)

so that ``from sleeper.io import SortedFileWriter`` imports ``sleeper.io.parquet`` only then: importing a package
never loads its modules (the CLI imports only what a command uses). ``tests/unit/test_package_faces.py`` checks that
a module of one package imports another package's names from its face, never from one of its modules, and that no
face offers a name its package also has as a module (importing that module would put the module in the name's place).
"""

from __future__ import annotations

import importlib
import re
import sys
from collections.abc import Callable
from pathlib import Path

__all__ = ["face_names", "lazy_face"]


_BLOCK = re.compile(r"^if TYPE_CHECKING:\n((?:[ \t]+.*\n|[ \t]*\n)+)", re.MULTILINE)
_IMPORT = re.compile(r"^[ \t]+from[ \t]+([\w.]+)[ \t]+import[ \t]+(\([^)]*\)|[^\n]*)", re.MULTILINE)
_COMMENT = re.compile(r"#[^\n]*")


def face_names(package: str, init_file: str | Path) -> dict[str, tuple[str, str]]:
    """The names a package's face offers: each with the module of the package it comes from and its name there,
    read from the ``from <package>.<module> import ...`` statements of the ``if TYPE_CHECKING:`` blocks at the top
    level of its ``__init__.py`` (as ruff formats them: one statement a line, or one in parentheses over several).

    The text is scanned rather than parsed: a face is read when a command first uses it, and parsing every face a
    command touches cost tens of milliseconds of its start.
    """
    text = Path(init_file).read_text(encoding="utf-8")
    names: dict[str, tuple[str, str]] = {}
    for block in _BLOCK.finditer(text):
        for statement in _IMPORT.finditer(block.group(1)):
            module = statement.group(1)
            if not module.startswith(package + "."):
                continue
            for item in _COMMENT.sub("", statement.group(2)).strip("()").split(","):
                parts = item.split()
                if len(parts) == 1:
                    names[parts[0]] = (module, parts[0])
                elif len(parts) == 3 and parts[1] == "as":
                    names[parts[2]] = (module, parts[0])
    return names


def lazy_face(package: str, init_file: str) -> tuple[Callable[[str], object], Callable[[], list[str]]]:
    """The module ``__getattr__`` and ``__dir__`` of a package's face (see the module's docstring): a name of the
    face is imported from its module when first used and then kept on the package; any other name raises
    ``AttributeError`` as a module does."""
    names: dict[str, tuple[str, str]] | None = None

    def offered() -> dict[str, tuple[str, str]]:
        nonlocal names
        if names is None:
            names = face_names(package, init_file)
        return names

    def __getattr__(name: str) -> object:  # noqa: N807 - a module's __getattr__
        source = offered().get(name)
        if source is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(source[0]), source[1])
        setattr(sys.modules[package], name, value)
        return value

    def __dir__() -> list[str]:  # noqa: N807 - a module's __dir__
        return sorted(set(vars(sys.modules[package])) | set(offered()))

    return __getattr__, __dir__
