"""Status messages to WebSocket clients, as Sleeper's ``WebSocketQueryStatusReportDestination`` sends them.

A query whose ``statusReportDestinations`` name a WebSocket connection gets, on that connection:

* ``{"message": "subqueries", "queryId", "queryIds": [sub-query ids]}`` once the query is split into sub-queries;
* ``{"message": "completed", "queryId", "rowCount", "locations": [{"type", "location"}]}`` for each sub-query as it
  finishes (``queryId`` is the sub-query's id), or for the query itself when it has no sub-queries;
* ``{"message": "error", "queryId", "error"}`` (with ``rowCount`` and ``locations`` when rows were published) when the
  query or a sub-query fails; ``error`` is ``"<ErrorType>: <reason>"``.

Sleeper's Java client counts a query finished once every sub-query sent its completed or error message; its Python
client stops at the first completed message, so over several leaf partitions it may return only the
first sub-query's rows. A status message that cannot be posted (the client went away) is logged and does not stop
the query.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sleeper.core import WebSocketPostError, WebSocketTarget
from sleeper.query.publishers import ResultsLocation, WebSocketPoster

__all__ = ["StatusReporter", "completed_message", "error_message", "subqueries_message"]

_LOG = logging.getLogger(__name__)


def subqueries_message(query_id: str, sub_query_ids: Sequence[str]) -> str:
    """The message saying a query was split into sub-queries."""
    return _dumps({"message": "subqueries", "queryId": query_id, "queryIds": list(sub_query_ids)})


def completed_message(query_id: str, row_count: int, locations: Sequence[ResultsLocation]) -> str:
    """The message saying a query or sub-query completed."""
    return _dumps(
        {
            "message": "completed",
            "queryId": query_id,
            "rowCount": row_count,
            "locations": [location.to_dict() for location in locations],
        }
    )


def error_message(
    query_id: str | None,
    error: str,
    row_count: int | None = None,
    locations: Sequence[ResultsLocation] | None = None,
) -> str:
    """The message saying a query or sub-query failed."""
    message: dict[str, Any] = {"message": "error", "queryId": query_id, "error": error}
    if row_count is not None:
        message["rowCount"] = row_count
    if locations is not None:
        message["locations"] = [location.to_dict() for location in locations]
    return _dumps(message)


def describe(error: BaseException) -> str:
    """An error as the ``error`` of a message: ``"<ErrorType>: <reason>"``."""
    return f"{type(error).__name__}: {error}"


def _dumps(message: dict[str, Any]) -> str:
    return json.dumps(message, separators=(",", ":"))


@dataclass(frozen=True, slots=True)
class StatusReporter:
    """Sends a query's status messages to the WebSocket connections it named (none: sends nothing)."""

    poster: WebSocketPoster | None
    targets: tuple[WebSocketTarget, ...] = ()

    def subqueries(self, query_id: str, sub_query_ids: Sequence[str]) -> None:
        """The query was split into these sub-queries."""
        self._send(subqueries_message(query_id, sub_query_ids))

    def completed(self, query_id: str, row_count: int, locations: Sequence[ResultsLocation] = ()) -> None:
        """The query or sub-query completed."""
        self._send(completed_message(query_id, row_count, locations))

    def failed(
        self,
        query_id: str | None,
        error: str,
        row_count: int | None = None,
        locations: Sequence[ResultsLocation] | None = None,
    ) -> None:
        """The query or sub-query failed."""
        self._send(error_message(query_id, error, row_count, locations))

    def _send(self, data: str) -> None:
        if self.poster is None:
            return
        for target in self.targets:
            try:
                self.poster.post(target, data, attempts=3, base_delay=0.5, max_delay=5.0)
            except WebSocketPostError as e:
                _LOG.warning("cannot post a status message to connection %s: %s", target.connection_id, e)
