"""The ``sleeper`` command prints logged warnings and errors one line each, tracebacks only when asked for."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from sleeper.cli.log_lines import configure_cli_logging

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture
def last_resort() -> Iterator[None]:
    """Puts Python's own last-resort handler back after the test."""
    kept = logging.lastResort
    yield
    logging.lastResort = kept


def _log_a_failed_job() -> None:
    # A logger outside the hierarchy: no handler of the root's or of pytest's takes its records
    logger = logging.Logger("sleeper.test.jobs")
    try:
        raise ValueError("compression codec 'lzo'\ncannot be written")
    except ValueError:
        logger.exception("job %s failed", "j1")
    logger.info("not shown")


@pytest.mark.usefixtures("last_resort")
def should_print_a_logged_failure_on_one_line_with_its_exception(capsys: pytest.CaptureFixture[str]) -> None:
    # Given the command's logging, and no handler configured for the logger
    configure_cli_logging(tracebacks=False)

    # When work it runs logs a failure with its exception, and an INFO line
    _log_a_failed_job()

    # Then standard error holds one line naming the failure and the exception, and no traceback
    assert capsys.readouterr().err.splitlines() == [
        "error: job j1 failed (ValueError: compression codec 'lzo' cannot be written)"
    ]


@pytest.mark.usefixtures("last_resort")
def should_print_the_traceback_when_asked_to(capsys: pytest.CaptureFixture[str]) -> None:
    # Given the command's logging with tracebacks
    configure_cli_logging(tracebacks=True)

    # When work it runs logs a failure with its exception
    _log_a_failed_job()

    # Then the line is followed by the traceback
    lines = capsys.readouterr().err.splitlines()
    assert lines[0] == "error: job j1 failed"
    assert lines[1] == "Traceback (most recent call last):"
    assert lines[-1] == "cannot be written"


@pytest.mark.parametrize(("variable", "traceback_shown"), [(None, False), ("1", True)])
def should_configure_the_command_at_its_start(variable: str | None, traceback_shown: bool) -> None:
    # Given the command's entry point, with a command that logs a failure
    code = (
        "import logging, sys\n"
        "import sleeper.cli.main as cli\n"
        "def run(argv):\n"
        "    logging.getLogger('sleeper.test').error('boom', exc_info=ValueError('bad'))\n"
        "    return 0\n"
        "cli.run = run\n"
        "sys.argv = ['sleeper']\n"
        "cli.main()\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "SLEEPER_TRACEBACKS"}
    if variable is not None:
        env["SLEEPER_TRACEBACKS"] = variable

    # When it runs
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env={**env, "PYTHONPATH": str(ROOT)}, cwd=ROOT
    )

    # Then the failure is one line, followed by the exception as a traceback prints it only if the user asked for it
    assert done.returncode == 0, done.stderr
    expected = ["error: boom", "ValueError: bad"] if traceback_shown else ["error: boom (ValueError: bad)"]
    assert done.stderr.splitlines() == expected


def should_leave_a_commands_own_logging_in_charge() -> None:
    # Given a command that sets up logging of its own, as run and aws-local up do
    code = (
        "import logging, sys\n"
        "import sleeper.cli.main as cli\n"
        "def run(argv):\n"
        "    logging.basicConfig(level=logging.INFO, format='own %(levelname)s %(message)s')\n"
        "    logging.getLogger('sleeper.test').info('pumping')\n"
        "    logging.getLogger('sleeper.test').error('boom', exc_info=ValueError('bad'))\n"
        "    return 0\n"
        "cli.run = run\n"
        "sys.argv = ['sleeper']\n"
        "cli.main()\n"
    )

    # When it runs
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)}
    )

    # Then its own handler writes every record, in its own format, with the exception as that format prints it
    assert done.returncode == 0, done.stderr
    assert done.stderr.splitlines() == ["own INFO pumping", "own ERROR boom", "ValueError: bad"]
