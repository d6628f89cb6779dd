"""The order test files start in under pytest-xdist (``tests/schedule.py``): the costliest file first, a file's tests
kept together and in order, and the seconds a run measured merged into the figures of earlier runs."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from tests.schedule import SECONDS_PER_TEST, SHARED_SETUP, order_by_cost, unit_of, write_measured


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


def should_keep_the_files_of_a_shared_setup_together_costed_as_their_sum() -> None:
    # Given two stack test files (one CDK setup between them) and a file of its own costlier than either stack file
    stacks = [_Test("tests/stacks/test_a.py::should_a"), _Test("tests/stacks/test_b.py::should_b")]
    alone = [_Test("tests/integration/test_alone.py::should_a")]
    table = {"tests/stacks/test_a.py": 4.0, "tests/stacks/test_b.py": 5.0, "tests/integration/test_alone.py": 6.0}
    # When they are ordered
    ordered = order_by_cost([stacks[0], *alone, stacks[1]], table)
    # Then the stack files form one unit (9 s), which starts first, its costlier file first
    assert unit_of("tests/stacks/test_a.py") == unit_of("tests/stacks/test_b.py") == "cdk"
    assert unit_of("tests/integration/test_alone.py") == "tests/integration/test_alone.py"
    assert _ids(ordered) == _ids([stacks[1], stacks[0], *alone])


def should_name_every_shared_setup_member_that_exists() -> None:
    # a member that was moved or renamed would silently leave its unit: each names a file or directory of the tests
    root = Path(__file__).resolve().parents[2]
    members = [member for members in SHARED_SETUP.values() for member in members]
    assert [m for m in members if not (root / m).exists() or (root / m).is_dir() != m.endswith("/")] == []
