"""The order test files start in, so a run split over pytest-xdist workers does not end on one slow file: a pytest
plugin, loaded by ``tests/conftest.py``.

``make test`` and ``make check`` give each worker a test file at a time (``--dist loadfile``) and keep the collection's
order of files (``--no-loadscope-reorder``; pytest-xdist would otherwise start the files with the most tests first,
leaving a slow file of a few tests to run alone at the end). This plugin makes that order the longest first: each
file's cost is its seconds in ``tests/durations.json`` (setup, call and teardown summed over its tests, as a full run
measured them), or, for a file not in it, :data:`SECONDS_PER_TEST` for each test it holds. Within a file, tests keep
their order. The order depends only on the collection and the table, so every worker collects the same list.

Every run also merges what it measured, a file's seconds per path, into ``test-reports/durations.json`` (a run under
pytest-xdist writes it from the controller, which sees every worker's reports; a file the run did not reach keeps its
earlier figure). To refresh the table after a full run::

    cp test-reports/durations.json tests/durations.json

The table only orders files: a stale or missing entry makes no test fail, it can only leave a slow file later.

Some files share a costly per-process setup: the CDK's jsii runtime, the example app synthesized once per session and
cfn-lint's rules (``tests/stacks``), or a Spark JVM (the bulk import and Spark source tests). Each worker that runs one
of them pays the setup again: spread over four workers, ``tests/stacks`` took 316 CPU seconds against 196 in one, and
the Spark files 210 against 128. :data:`SHARED_SETUP` puts each such set of files in one unit of work, which one worker
runs (this plugin's pytest-xdist scheduler: ``--dist loadfile`` with those units in place of single files); a unit
costs the sum of its files and starts in the order of that cost.
"""

from __future__ import annotations

import json
import os
from collections import defaultdict
from pathlib import Path
from typing import Any, Protocol, TypeVar

import pytest

__all__ = [
    "MEASURED_PATH",
    "SECONDS_PER_TEST",
    "SHARED_SETUP",
    "TABLE_PATH",
    "file_costs",
    "order_by_cost",
    "unit_of",
    "write_measured",
]

TABLE_PATH = Path(__file__).resolve().parent / "durations.json"
"""The checked-in table: test file path (relative to the repository) -> seconds a full run spent in it."""

MEASURED_PATH = Path(__file__).resolve().parent.parent / "test-reports" / "durations.json"
"""Where each run writes the seconds it measured per file (the directory is made when missing; it is not in git)."""

SECONDS_PER_TEST = 0.2
"""The cost given to each test of a file the table does not name."""

_MEASURED = pytest.StashKey[dict[str, float]]()


SHARED_SETUP: dict[str, tuple[str, ...]] = {
    "cdk": ("tests/stacks/",),
    "spark": (
        "tests/integration/bulk_import/",
        "tests/integration/spark/",
        "tests/integration/aws_local/test_spark_source_emulated.py",
        "tests/integration/runtime/test_redelivery_matrix.py",
        "tests/integration/cli/test_cli_conventions.py",
    ),
}
"""Units of work that one worker runs whole, by name: the files (a path) or directories (a path ending in ``/``) whose
tests share a costly setup in the worker's process. Every other file is a unit of its own."""


def _file_of(nodeid: str) -> str:
    return nodeid.split("::", 1)[0]


def unit_of(path: str) -> str:
    """The unit of work a test file (a path relative to the repository) belongs to: a :data:`SHARED_SETUP` name, or
    the file itself."""
    for name, members in SHARED_SETUP.items():
        if any(path == member or (member.endswith("/") and path.startswith(member)) for member in members):
            return name
    return path


def file_costs(files: dict[str, int], table: dict[str, float]) -> dict[str, float]:
    """Each file's expected seconds: the table's figure, else :data:`SECONDS_PER_TEST` per test (``files`` maps a
    path to how many tests were collected from it)."""
    return {path: float(table.get(path, count * SECONDS_PER_TEST)) for path, count in files.items()}


class _HasNodeId(Protocol):
    @property
    def nodeid(self) -> str: ...


_Item = TypeVar("_Item", bound=_HasNodeId)


def order_by_cost(items: list[_Item], table: dict[str, float]) -> list[_Item]:
    """``items`` (tests, each named by its ``nodeid``) grouped by unit of work (:func:`unit_of`) and within it by file:
    the costliest unit first (a unit costs the sum of its files), in a unit the costliest file first (ties keep the
    collection's order), each file's tests in their collected order."""
    by_file: dict[str, list[_Item]] = {}
    for item in items:
        by_file.setdefault(_file_of(item.nodeid), []).append(item)
    costs = file_costs({path: len(tests) for path, tests in by_file.items()}, table)
    unit_costs: dict[str, float] = defaultdict(float)
    first_seen: dict[str, int] = {}
    for path, cost in costs.items():
        unit_costs[unit_of(path)] += cost
        first_seen.setdefault(unit_of(path), len(first_seen))
    # units of equal cost keep the collection's order, and so do files of equal cost in a unit (sorted() is stable)
    ordered = sorted(by_file, key=lambda p: (-unit_costs[unit_of(p)], first_seen[unit_of(p)], -costs[p]))
    return [item for path in ordered for item in by_file[path]]


def _read_table() -> dict[str, float]:
    return _read(TABLE_PATH)


def _read(path: Path) -> dict[str, float]:
    try:
        loaded = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return {str(k): float(v) for k, v in loaded.items()} if isinstance(loaded, dict) else {}


_ACTIVE: list[dict[str, float]] = []
"""The seconds per file of each session running in this process, innermost last (a plugin test may run a session in
a session)."""


def pytest_configure(config: pytest.Config) -> None:
    config.stash[_MEASURED] = defaultdict(float)


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    items[:] = order_by_cost(items, _read_table())


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """Under ``--dist loadfile``, pytest-xdist's scheduler by file with :data:`SHARED_SETUP`'s units in place of their
    files; any other ``--dist`` keeps pytest-xdist's own."""
    if config.getoption("dist", None) != "loadfile":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class _UnitScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return unit_of(_file_of(nodeid))

    return _UnitScheduling(config, log)


@pytest.hookimpl(tryfirst=True)
def pytest_sessionstart(session: pytest.Session) -> None:
    _ACTIVE.append(session.config.stash[_MEASURED])


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if _ACTIVE:
        _ACTIVE[-1][_file_of(report.nodeid)] += report.duration


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    measured = session.config.stash[_MEASURED]
    _ACTIVE[:] = [active for active in _ACTIVE if active is not measured]
    if hasattr(session.config, "workerinput") or not measured:
        return  # a pytest-xdist worker: the controller writes what every worker measured
    path = Path(os.environ.get("SLEEPER_DURATIONS_REPORT", str(MEASURED_PATH)))
    write_measured(path, measured)


def write_measured(path: Path, measured: dict[str, float]) -> None:
    """Merges a run's seconds per file into the figures at ``path`` (a file the run did not reach keeps its earlier
    figure), the costliest first."""
    merged = _read(path)
    merged.update(measured)
    path.parent.mkdir(parents=True, exist_ok=True)
    rounded = {name: round(seconds, 2) for name, seconds in sorted(merged.items(), key=lambda kv: (-kv[1], kv[0]))}
    path.write_text(json.dumps(rounded, indent=0) + "\n", encoding="utf-8")
