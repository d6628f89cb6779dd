"""Posting to WebSocket connections through API Gateway's management API (``PostToConnection``), as Sleeper's
``ApiGatewayWebSocketOutput`` does: one client per management endpoint, throttled posts retried with exponential
backoff and half jitter, a gone connection reported as :class:`~sleeper.core.websocket.ConnectionGoneError`.

A message longer than API Gateway's limit (:data:`~sleeper.core.websocket.MESSAGE_MAX_BYTES`) is refused before it
is sent. The endpoint comes from the message's target, so the region is the target's, else the instance's.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from sleeper.adapters.aws.clients import AwsSettings
from sleeper.core import MESSAGE_MAX_BYTES, ConnectionGoneError, WebSocketPostError, WebSocketTarget

__all__ = ["ApiGatewayWebSocketPoster"]

_THROTTLED = frozenset({"LimitExceededException", "ThrottlingException", "TooManyRequestsException"})


class ApiGatewayWebSocketPoster:
    """Posts messages to WebSocket connections (implements the query feature's ``WebSocketPoster`` port).

    Args:
        settings: Where to reach AWS (the region and credentials; the endpoint is each target's).
        sleep: Waits between throttled attempts (injected in tests).
        jitter: A number in [0, 1) (injected in tests).
    """

    def __init__(
        self,
        settings: AwsSettings,
        *,
        sleep: Callable[[float], None] = time.sleep,
        jitter: Callable[[], float] = random.random,
    ) -> None:
        self._settings = settings
        self._sleep = sleep
        self._jitter = jitter
        self._clients: dict[tuple[str, str], Any] = {}
        self._lock = threading.Lock()

    def _client(self, target: WebSocketTarget) -> Any:
        region = target.region or self._settings.region
        key = (target.endpoint, region)
        with self._lock:
            client = self._clients.get(key)
            if client is None:
                session = self._settings._session()
                client = session.client(
                    "apigatewaymanagementapi",
                    endpoint_url=target.endpoint,
                    region_name=region,
                    config=self._settings._config(),
                )
                self._clients[key] = client
            return client

    def post(self, target: WebSocketTarget, data: str, *, attempts: int, base_delay: float, max_delay: float) -> None:
        """Posts one message to the connection.

        Raises:
            ConnectionGoneError: If the client disconnected.
            WebSocketPostError: If the message is too large, the post is refused, or it is still throttled after
                ``attempts`` attempts.
        """
        payload = data.encode("utf-8")
        if len(payload) > MESSAGE_MAX_BYTES:
            raise WebSocketPostError(
                f"a message of {len(payload):,} bytes is over API Gateway's WebSocket message limit "
                f"({MESSAGE_MAX_BYTES:,} bytes)"
            )
        client = self._client(target)
        for attempt in range(1, max(1, attempts) + 1):
            try:
                client.post_to_connection(ConnectionId=target.connection_id, Data=payload)
                return
            except ClientError as e:
                code = str(e.response.get("Error", {}).get("Code", ""))
                if code == "GoneException":
                    raise ConnectionGoneError(f"WebSocket connection {target.connection_id} is gone") from None
                if code in _THROTTLED and attempt < attempts:
                    ceiling = min(max_delay, base_delay * 2 ** (attempt - 1))
                    self._sleep(ceiling / 2 + self._jitter() * ceiling / 2)
                    continue
                raise WebSocketPostError(
                    f"cannot post to WebSocket connection {target.connection_id} at {target.endpoint}: {code}: "
                    f"{e.response.get('Error', {}).get('Message', '')}"
                ) from None
            except BotoCoreError as e:
                raise WebSocketPostError(
                    f"cannot reach the WebSocket management API at {target.endpoint}: {e}"
                ) from None
