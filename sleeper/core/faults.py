"""Named crash points (docs/reliability.md): places in the code where a test can make a worker crash.

The code calls :func:`crash_point` with a name at each place where a crash leaves interesting state behind (files
written but not committed, a commit made but its message not deleted, files deleted but not recorded). The call does
nothing unless a test (or the local runtime, from the ``SLEEPER_CRASH_AT`` environment variable; see
``sleeper.runtime.faults_env``) has armed that name with an action:

* :func:`raise_crash` raises :class:`CrashPointReached`. It derives from ``BaseException``, as ``SystemExit`` does, so
  no ``except Exception`` handler takes the crash for an error it can record and recover from: the worker unwinds as
  if it had died, leaving its queue message in flight. ``finally`` blocks still run, so cleanup code in them is not
  tested by this action.
* :func:`exit_process` ends the process at once with exit code 137 (what a shell reports for ``kill -9``): no
  ``finally`` block, ``atexit`` hook or buffered write runs, just as when the process is killed.

Arming is per process and thread-safe. Nothing here reads the environment.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from types import MappingProxyType

__all__ = [
    "CRASH_POINTS",
    "KILLED_EXIT_CODE",
    "CrashAction",
    "CrashPointReached",
    "arm",
    "armed",
    "armed_points",
    "crash_point",
    "disarm",
    "disarm_all",
    "exit_process",
    "raise_crash",
]

KILLED_EXIT_CODE = 137
"""The exit code :func:`exit_process` ends the process with: 128 + SIGKILL, as a shell reports ``kill -9``."""

CRASH_POINTS: Mapping[str, str] = MappingProxyType(
    {
        "ingest.after_input_sorted": "Standard ingest read its input into sorted runs in its local temporary "
        "directory, before writing data files.",
        "ingest.after_files_written": "Standard ingest wrote its data files and sketches, before ADD_FILES.",
        "compaction.after_output_written": "A compaction run wrote its output file, before its commit.",
        "compaction.after_commit": "A compaction run committed (or sent its commit), before its message is deleted.",
        "gc.after_delete": "The garbage collector deleted a batch of files, before DELETE_FILES records them.",
        "statestore.after_body_put": "A transaction body too large for the log was stored in the body store (S3 on "
        "AWS), before the log entry pointing at it was put.",
        "statestore.after_log_put": "A transaction's log entry was put, before its writer applied it to its own state "
        "and returned (its caller does not know it landed).",
        "statestore.after_snapshot_load": "A log head loaded a snapshot, before it read the log entries after it.",
        "snapshot.after_upload": "A snapshot file was written, before its metadata record was saved.",
        "snapshot.after_metadata": "A snapshot's metadata record was saved, before its creator returned.",
        "committer.after_commit": "The state store committer applied a commit request to the log, before recording "
        "it in the job trackers and before its message is deleted.",
        "worker.before_message_delete": "A local worker finished a message's work, before deleting the message from "
        "its queue.",
    }
)
"""The crash points the code calls, with what has happened when each is reached."""

CrashAction = Callable[[str], None]
"""What an armed crash point does; it is given the point's name. It may raise, end the process, or return."""


class CrashPointReached(BaseException):
    """A simulated crash at an armed crash point.

    Not an ``Exception``: handlers that catch errors to record or retry them must not catch a crash.

    Attributes:
        name: The crash point.
    """

    def __init__(self, name: str) -> None:
        super().__init__(f"crash point {name} reached")
        self.name = name


def raise_crash(name: str) -> None:
    """A crash action: raises :class:`CrashPointReached`.

    Raises:
        CrashPointReached: Always.
    """
    raise CrashPointReached(name)


def exit_process(name: str) -> None:
    """A crash action: ends the process at once with exit code 137, running no cleanup, as ``kill -9`` would."""
    os._exit(KILLED_EXIT_CODE)


class _Armed:
    __slots__ = ("action", "remaining")

    def __init__(self, action: CrashAction, remaining: int | None) -> None:
        self.action = action
        self.remaining = remaining


_lock = threading.Lock()
_armed: dict[str, _Armed] = {}


def crash_point(name: str) -> None:
    """Marks a crash point. Does nothing unless ``name`` is armed; then runs its action.

    Args:
        name: The crash point (see :data:`CRASH_POINTS`).
    """
    if not _armed:  # the usual case: no lock taken
        return
    with _lock:
        entry = _armed.get(name)
        if entry is None:
            return
        if entry.remaining is not None:
            entry.remaining -= 1
            if entry.remaining <= 0:
                del _armed[name]
        action = entry.action
    action(name)


def arm(name: str, action: CrashAction = raise_crash, *, times: int | None = None) -> None:
    """Arms a crash point, replacing any action it had.

    Args:
        name: The crash point. Any name may be armed; only names the code calls are ever reached.
        action: What to do when it is reached (:func:`raise_crash` by default, or :func:`exit_process`).
        times: Disarm it after it has fired this many times (None: it fires every time until disarmed).

    Raises:
        ValueError: If ``name`` is empty or ``times`` is not positive.
    """
    if not name:
        raise ValueError("a crash point needs a name")
    if times is not None and times < 1:
        raise ValueError(f"times must be positive, got {times}")
    with _lock:
        _armed[name] = _Armed(action, times)


def disarm(name: str) -> None:
    """Disarms one crash point (nothing happens if it was not armed)."""
    with _lock:
        _armed.pop(name, None)


def disarm_all() -> None:
    """Disarms every crash point."""
    with _lock:
        _armed.clear()


def armed_points() -> frozenset[str]:
    """The names of the crash points armed now."""
    with _lock:
        return frozenset(_armed)


@contextmanager
def armed(name: str, action: CrashAction = raise_crash, *, times: int | None = None) -> Iterator[None]:
    """Arms a crash point for the duration of a ``with`` block, then disarms it (see :func:`arm`)."""
    arm(name, action, times=times)
    try:
        yield
    finally:
        disarm(name)
