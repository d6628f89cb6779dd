"""Bounds on the package's shape that keep it readable: no module over 800 lines, and a few shared ports for the
features' tables and instances instead of one Protocol per feature (``sleeper.statestore.tables``)."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "sleeper"

MAX_MODULE_LINES = 800
"""The most lines a module of the package may have."""


MAX_TABLE_AND_INSTANCE_PORTS = 12
"""The most Protocols named for a table, an instance, a runtime or tables, aliases of the shared table ports
included (``sleeper.statestore.tables`` holds the shared ones every feature types against)."""

PORT_CLASS = re.compile(r"^class \w*(Instance|Runtime|Table|Tables)\w*\(.*Protocol", re.MULTILINE)
PORT_ALIAS = re.compile(r"^\w+ = (SleeperTable|TableLookup)", re.MULTILINE)


def _modules() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def _long_modules(limit: int) -> list[str]:
    out = []
    for path in _modules():
        lines = len(path.read_text().splitlines())
        if lines > limit:
            out.append(f"{path.relative_to(ROOT)}: {lines} lines")
    return out


def _table_and_instance_ports() -> list[str]:
    """Each Protocol named for a table, an instance, a runtime or tables, and each alias of the shared table ports,
    as ``path:name`` (the same scan as ``grep -rEn`` with the patterns above)."""
    found = []
    for path in _modules():
        rel = path.relative_to(ROOT).as_posix()
        text = path.read_text()
        for pattern in (PORT_CLASS, PORT_ALIAS):
            for match in pattern.finditer(text):
                name = match.group(0).removeprefix("class ").split("(")[0].split(" =")[0]
                found.append(f"{rel}:{name}")
    return found


def should_keep_every_module_under_800_lines() -> None:
    # Given every module of the package
    # When their lines are counted
    long = _long_modules(MAX_MODULE_LINES)
    # Then none is over the bound
    assert long == []


def should_type_the_features_against_a_few_shared_ports() -> None:
    # Given every module of the package
    # When the Protocols named for a table, an instance, a runtime or tables, and the aliases of the table ports,
    # are counted
    ports = _table_and_instance_ports()
    # Then there are a dozen or fewer
    assert len(ports) <= MAX_TABLE_AND_INSTANCE_PORTS, "\n".join(ports)


def should_count_port_classes_and_aliases_as_grep_does(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Given a package with a feature port, an alias of the shared table port, a Protocol of another kind, a class
    # that is no Protocol, and a long module
    package = tmp_path / "sleeper" / "feature"
    package.mkdir(parents=True)
    (package / "ports.py").write_text(
        "from typing import Protocol\n"
        "class FeatureRuntime(SleeperInstance, Protocol):\n    pass\n"
        "FeatureTable = SleeperTable\n"
        "class FileStore(Protocol):\n    pass\n"
        "class LocalInstance:\n    pass\n"
    )
    (package / "long.py").write_text("x = 1\n" * 11)
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    monkeypatch.setattr(sys.modules[__name__], "PACKAGE", tmp_path / "sleeper")
    # When counted and measured
    ports = _table_and_instance_ports()
    long = _long_modules(10)
    # Then the Protocol and the alias are counted, and the long module is named
    assert ports == ["sleeper/feature/ports.py:FeatureRuntime", "sleeper/feature/ports.py:FeatureTable"]
    assert long == ["sleeper/feature/long.py: 11 lines"]
