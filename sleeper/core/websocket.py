"""The WebSocket query API's shared facts: API Gateway's limits, a connection to post to, and the errors of
posting. Standard library only: the query feature, the AWS adapter that posts, the stack and the emulator's server
all read them from here.
"""

from __future__ import annotations

from dataclasses import dataclass

from sleeper.core.exceptions import SleeperError

__all__ = [
    "FRAME_MAX_BYTES",
    "IDLE_TIMEOUT_SECONDS",
    "MESSAGE_MAX_BYTES",
    "STAGE",
    "ConnectionGoneError",
    "WebSocketPostError",
    "WebSocketTarget",
    "management_endpoint",
]

MESSAGE_MAX_BYTES = 128 * 1024
"""API Gateway's limit on one WebSocket message (and on the data of one ``PostToConnection``)."""
FRAME_MAX_BYTES = 32 * 1024
"""API Gateway's limit on one WebSocket frame: longer messages are sent as several frames."""
IDLE_TIMEOUT_SECONDS = 600
"""API Gateway closes a WebSocket connection idle for this long."""
STAGE = "live"
"""The stage of the query WebSocket API, as Sleeper deploys it."""
_LOOPBACK = frozenset({"127.0.0.1", "localhost", "[::1]"})


class WebSocketPostError(SleeperError):
    """A message could not be posted to a WebSocket connection (too large, refused, or throttled past the retries)."""


class ConnectionGoneError(WebSocketPostError):
    """The WebSocket client disconnected: nothing more can be posted to the connection."""


@dataclass(frozen=True, slots=True, kw_only=True)
class WebSocketTarget:
    """A WebSocket connection to post messages to through API Gateway's management API.

    Attributes:
        endpoint: The management API endpoint (``https://<api>.execute-api.<region>.amazonaws.com/<stage>``).
        connection_id: The connection.
        region: The management API's region, if given.
    """

    endpoint: str
    connection_id: str
    region: str | None = None


def management_endpoint(domain_name: str, stage: str) -> str:
    """The management API endpoint of a WebSocket API's stage, from the ``domainName`` and ``stage`` of the events
    API Gateway sends: ``https://<domain>/<stage>`` (``http`` on the loopback address, where an emulator serves it)."""
    host = domain_name.rsplit(":", 1)[0] if not domain_name.startswith("[") else domain_name.split("]")[0] + "]"
    scheme = "http" if host in _LOOPBACK else "https"
    return f"{scheme}://{domain_name}/{stage}"
