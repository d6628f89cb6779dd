"""Arming crash points from the environment, for kill-and-restart tests of the local runtime.

``SLEEPER_CRASH_AT=name[,name...]`` arms each named crash point (see :data:`sleeper.core.faults.CRASH_POINTS`) with
:func:`sleeper.core.faults.exit_process`: the process ends with exit code 137 as soon as it reaches one, as if killed
with ``kill -9``. ``sleeper run`` reads it when it starts; nothing else does.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping

from sleeper.core import CRASH_POINTS, CrashAction, SleeperError, arm, exit_process

__all__ = ["CRASH_AT_VARIABLE", "UnknownCrashPointError", "arm_crash_points_from_environment", "parse_crash_points"]

CRASH_AT_VARIABLE = "SLEEPER_CRASH_AT"
"""The environment variable naming the crash points to arm, comma-separated."""

_LOG = logging.getLogger(__name__)


class UnknownCrashPointError(SleeperError):
    """``SLEEPER_CRASH_AT`` names a crash point the code does not have (a typo would otherwise never crash)."""


def parse_crash_points(value: str) -> tuple[str, ...]:
    """The crash point names in a ``SLEEPER_CRASH_AT`` value, in order, without blanks or repeats.

    Raises:
        UnknownCrashPointError: If a name is not one of :data:`~sleeper.core.faults.CRASH_POINTS`.
    """
    names = tuple(dict.fromkeys(part.strip() for part in value.split(",") if part.strip()))
    unknown = [name for name in names if name not in CRASH_POINTS]
    if unknown:
        raise UnknownCrashPointError(
            f"{CRASH_AT_VARIABLE} names unknown crash points {', '.join(unknown)}; "
            f"known: {', '.join(sorted(CRASH_POINTS))}"
        )
    return names


def arm_crash_points_from_environment(
    environ: Mapping[str, str] | None = None, *, action: CrashAction = exit_process
) -> tuple[str, ...]:
    """Arms the crash points ``SLEEPER_CRASH_AT`` names, to end the process when reached.

    Args:
        environ: The environment (``os.environ`` if None).
        action: What an armed point does (ending the process by default; tests pass another).

    Returns:
        The names armed (empty if the variable is unset or blank).

    Raises:
        UnknownCrashPointError: If a name is not a known crash point; nothing is armed.
    """
    names = parse_crash_points((os.environ if environ is None else environ).get(CRASH_AT_VARIABLE, ""))
    for name in names:
        arm(name, action)
    if names:
        _LOG.warning("crash points armed from %s: %s", CRASH_AT_VARIABLE, ", ".join(names))
    return names
