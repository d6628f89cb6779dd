"""How the ``sleeper`` command shows the warnings and errors that work it runs logs: one line each, on standard error.

Work a command runs in its own process (``compact``, ``ingest`` and the other commands that drain queues locally)
logs a job that fails, with its exception, before the command reports the outcome in its own ``error:`` line. Such a
failure is most often a user's mistake (a table property naming a codec pyarrow cannot write, an iterator that cannot
be imported), not a bug, so each record that no configured handler takes is one line rather than Python's default of
the whole traceback: ``warning:`` or ``error:``, the message, and the exception's type and message. The job trackers
keep each failure's reasons; setting the environment variable ``SLEEPER_TRACEBACKS=1`` prints the tracebacks here
too, for a bug report. Commands that set up logging of their own (``run`` logs as a service does, ``aws-local up``)
keep it: this handler takes Python's last-resort place (``logging.lastResort``), not a place on the root logger.
"""

from __future__ import annotations

import logging

from sleeper.core import StandardStreamHandler

__all__ = ["TRACEBACKS_VARIABLE", "configure_cli_logging"]

TRACEBACKS_VARIABLE = "SLEEPER_TRACEBACKS"
"""The environment variable that, set to ``1``, makes the command print logged exceptions with their tracebacks."""


class _OneLine(logging.Formatter):
    """``<level>: <message> (<exception type>: <exception message>)`` on one line, or with the traceback after it."""

    def __init__(self, *, tracebacks: bool) -> None:
        super().__init__()
        self._tracebacks = tracebacks

    def format(self, record: logging.LogRecord) -> str:
        text = f"{record.levelname.lower()}: {' '.join(record.getMessage().splitlines())}"
        if record.exc_info is None or record.exc_info[1] is None:
            return text
        if self._tracebacks:
            return f"{text}\n{self.formatException(record.exc_info)}"
        error = record.exc_info[1]
        return f"{text} ({type(error).__name__}: {' '.join(str(error).splitlines())})"


def configure_cli_logging(*, tracebacks: bool) -> None:
    """Makes warnings and errors that reach no handler print one line each on standard error (see the module
    docstring), in place of Python's last-resort handler (``logging.lastResort``).

    Commands that set up logging of their own (``run``, ``aws-local up``) still do: this handler serves only records
    no configured handler takes.

    Args:
        tracebacks: Print each logged exception's traceback after its line.
    """
    handler = StandardStreamHandler()
    handler.setLevel(logging.WARNING)
    handler.setFormatter(_OneLine(tracebacks=tracebacks))
    logging.lastResort = handler
