"""The order test files start in under pytest-xdist (``tests/schedule.py``): the costliest file first, a file's tests
kept together and in order, and the seconds a run measured merged into the figures of earlier runs."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from tests.schedule import SECONDS_PER_TEST, order_by_cost, write_measured


@dataclass(frozen=True)
class _Test:
    nodeid: str


def _ids(tests: list[_Test]) -> list[str]:
    return [test.nodeid for test in tests]


def should_start_the_costliest_file_first_keeping_each_files_tests_together_and_in_order() -> None:
    # Given a file of many quick tests collected before a slow file of one test
    quick = [_Test(f"tests/unit/test_quick.py::should_{n}") for n in range(5)]
    slow = [_Test("tests/integration/test_slow.py::should_take_a_minute")]
    medium = [_Test("tests/unit/test_medium.py::should_a"), _Test("tests/unit/test_medium.py::should_b")]
    table = {"tests/integration/test_slow.py": 60.0, "tests/unit/test_medium.py": 3.0, "tests/unit/test_quick.py": 0.5}
    # When they are ordered by the table's seconds
    ordered = order_by_cost([*quick, medium[0], *slow, medium[1]], table)
    # Then the slow file starts first and each file's tests stay together in their collected order
    assert _ids(ordered) == _ids([*slow, *medium, *quick])


def should_cost_a_file_missing_from_the_table_by_its_number_of_tests() -> None:
    # Given a file the table names and two it does not, one with more tests than the other
    few = [_Test("tests/unit/test_few.py::should_a")]
    many = [_Test(f"tests/unit/test_many.py::should_{n}") for n in range(10)]
    known = [_Test("tests/unit/test_known.py::should_a")]
    table = {"tests/unit/test_known.py": 5 * SECONDS_PER_TEST}
    # When they are ordered
    ordered = order_by_cost([*few, *known, *many], table)
    # Then the unnamed files cost SECONDS_PER_TEST a test: ten tests before the named file, one test after it
    assert _ids(ordered) == _ids([*many, *known, *few])


def should_keep_the_collections_order_between_files_of_equal_cost() -> None:
    tests = [_Test("tests/b.py::should_a"), _Test("tests/a.py::should_a"), _Test("tests/c.py::should_a")]
    assert _ids(order_by_cost(tests, {})) == _ids(tests)


def should_merge_a_runs_seconds_into_the_earlier_figures_costliest_first(tmp_path: Path) -> None:
    # Given figures of an earlier run
    path = tmp_path / "reports" / "durations.json"
    write_measured(path, {"tests/a.py": 1.0, "tests/b.py": 2.0})
    # When a later run measures one of those files again and a new one
    write_measured(path, {"tests/a.py": 7.123, "tests/c.py": 0.5})
    # Then the file holds every file's latest figure, the costliest first
    written = json.loads(path.read_text(encoding="utf-8"))
    assert list(written.items()) == [("tests/a.py", 7.12), ("tests/b.py", 2.0), ("tests/c.py", 0.5)]
