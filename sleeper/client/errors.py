"""The errors of :mod:`sleeper.client`.

Each derives from :class:`~sleeper.core.exceptions.SleeperError` and from the built-in exception Sleeper's own
Python client raises in the same case (``ValueError`` for a bad argument, ``RuntimeError`` for a failed or timed-out
query), so a script catching those keeps working.
"""

from __future__ import annotations

from sleeper.core import SleeperError, exceptions

__all__ = [
    "ClientArgumentError",
    "InstanceNotFoundError",
    "NotYetAvailableError",
    "QueryFailedError",
    "QueryTimeoutError",
    "SleeperClientError",
]


class SleeperClientError(SleeperError):
    """Base class of the errors of :mod:`sleeper.client`."""


class ClientArgumentError(SleeperClientError, ValueError):
    """An argument given to the client is invalid; nothing was sent."""


class InstanceNotFoundError(SleeperClientError, exceptions.InstanceNotFoundError):
    """The instance's config bucket or its ``instance.properties`` could not be read (the client's kind of
    :class:`sleeper.core.exceptions.InstanceNotFoundError`, which ``sleeper.connect`` raises in the same case)."""


class QueryFailedError(SleeperClientError, RuntimeError):
    """The query tracker says the query failed (or partially failed); the message gives its reasons.

    Attributes:
        query_id: The query id.
        state: The tracker's state of the query (``FAILED`` or ``PARTIALLY_FAILED``).
    """

    def __init__(self, message: str, *, query_id: str, state: str) -> None:
        super().__init__(message)
        self.query_id = query_id
        self.state = state


class QueryTimeoutError(SleeperClientError, RuntimeError):
    """The query did not finish within the client's maximum wait.

    Attributes:
        query_id: The query id.
    """

    def __init__(self, message: str, *, query_id: str) -> None:
        super().__init__(message)
        self.query_id = query_id


class NotYetAvailableError(SleeperClientError, NotImplementedError):
    """A method of Sleeper's client whose server side this instance does not have yet (the message names the
    issue)."""
