"""Posting to WebSocket connections through API Gateway's management API (the AWS adapter of the query feature's
WebSocketPoster port): the message limit, a gone connection, throttled posts retried with backoff and half jitter."""

from __future__ import annotations

from typing import Any

import pytest
from botocore.exceptions import ClientError

from sleeper.adapters.aws.clients import AwsSettings
from sleeper.adapters.aws.websocket_api import ApiGatewayWebSocketPoster
from sleeper.core.websocket import MESSAGE_MAX_BYTES, ConnectionGoneError, WebSocketPostError, WebSocketTarget

TARGET = WebSocketTarget(endpoint="https://abc.execute-api.eu-west-2.amazonaws.com/live", connection_id="c1")


class FakeClient:
    """A management API client failing with the given error codes, then succeeding."""

    def __init__(self, *codes: str) -> None:
        self.codes = list(codes)
        self.posted: list[dict[str, Any]] = []

    def post_to_connection(self, **request: Any) -> None:
        if self.codes:
            code = self.codes.pop(0)
            raise ClientError({"Error": {"Code": code, "Message": code}}, "PostToConnection")
        self.posted.append(request)


def _poster(client: FakeClient, sleeps: list[float]) -> ApiGatewayWebSocketPoster:
    poster = ApiGatewayWebSocketPoster(
        AwsSettings("eu-west-2", access_key_id="a", secret_access_key="s"), sleep=sleeps.append, jitter=lambda: 1.0
    )
    poster._client = lambda target: client  # type: ignore[method-assign]
    return poster


def should_retry_a_throttled_post_with_backoff() -> None:
    client, sleeps = FakeClient("LimitExceededException", "LimitExceededException"), []
    _poster(client, sleeps).post(TARGET, "hi", attempts=3, base_delay=0.5, max_delay=20.0)
    assert client.posted == [{"ConnectionId": "c1", "Data": b"hi"}]
    assert sleeps == [0.5, 1.0]


def should_give_up_when_still_throttled_after_the_attempts() -> None:
    client, sleeps = FakeClient(*["LimitExceededException"] * 3), []
    with pytest.raises(WebSocketPostError, match="LimitExceededException"):
        _poster(client, sleeps).post(TARGET, "hi", attempts=2, base_delay=0.5, max_delay=20.0)
    assert len(sleeps) == 1 and client.posted == []


def should_report_a_gone_connection() -> None:
    with pytest.raises(ConnectionGoneError, match="c1 is gone"):
        _poster(FakeClient("GoneException"), []).post(TARGET, "hi", attempts=3, base_delay=0.5, max_delay=20.0)


def should_refuse_a_message_over_the_api_gateway_limit_without_posting() -> None:
    client = FakeClient()
    with pytest.raises(WebSocketPostError, match="over API Gateway's WebSocket message limit"):
        _poster(client, []).post(TARGET, "x" * (MESSAGE_MAX_BYTES + 1), attempts=1, base_delay=0.5, max_delay=1.0)
    assert client.posted == []
