"""SLEEPER_CRASH_AT: which crash points the local runtime arms from its environment."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from sleeper.core import faults
from sleeper.runtime.faults_env import (
    CRASH_AT_VARIABLE,
    UnknownCrashPointError,
    arm_crash_points_from_environment,
    parse_crash_points,
)


@pytest.fixture(autouse=True)
def _disarmed() -> Iterator[None]:
    faults.disarm_all()
    yield
    faults.disarm_all()


def should_read_names_in_order_without_blanks_or_repeats() -> None:
    # When a value with spaces, an empty item and a repeat is parsed
    names = parse_crash_points(" gc.after_delete, ,ingest.after_files_written,gc.after_delete ")
    # Then the names come in order, once each
    assert names == ("gc.after_delete", "ingest.after_files_written")


def should_arm_the_named_points_with_the_action() -> None:
    # Given an environment naming two points
    seen: list[str] = []
    environ = {CRASH_AT_VARIABLE: "compaction.after_commit,gc.after_delete"}
    # When they are armed from it
    armed = arm_crash_points_from_environment(environ, action=seen.append)
    faults.crash_point("gc.after_delete")
    faults.crash_point("ingest.after_files_written")
    # Then exactly those points are armed with the action
    assert armed == ("compaction.after_commit", "gc.after_delete")
    assert faults.armed_points() == set(armed)
    assert seen == ["gc.after_delete"]


def should_arm_nothing_when_the_variable_is_unset_or_blank() -> None:
    # When the environment has no value, then a blank one
    # Then nothing is armed
    assert arm_crash_points_from_environment({}) == ()
    assert arm_crash_points_from_environment({CRASH_AT_VARIABLE: " , "}) == ()
    assert faults.armed_points() == frozenset()


def should_refuse_an_unknown_name_and_arm_nothing() -> None:
    # Given a misspelt name beside a good one
    environ = {CRASH_AT_VARIABLE: "gc.after_delete,ingest.after_file_written"}
    # When they are armed
    with pytest.raises(UnknownCrashPointError, match="ingest.after_file_written"):
        arm_crash_points_from_environment(environ)
    # Then nothing is armed
    assert faults.armed_points() == frozenset()
