"""SigV4 checks as API Gateway makes them on an IAM-authorised route (the emulated WebSocket and REST APIs): a request
signed by boto3's signer (or as Sleeper's Python client signs its WebSocket connection) passes; one that is unsigned,
signed by another key or secret, for another region or service, too old, with a session token the emulator never
issued, or changed after signing, is refused."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import pytest
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

from sleeper.adapters.aws.clients import AwsSettings
from sleeper.adapters.aws.sigv4 import SigningKey, SigV4Error, check_signature, sign_connect

KEY = SigningKey("testing", "testing", "eu-west-2")
URL = "http://127.0.0.1:4567/live/@connections/abc"


def _signed(
    *,
    secret: str = "testing",
    access: str = "testing",
    region: str = "eu-west-2",
    service: str = "execute-api",
    body: bytes = b'{"a": 1}',
    token: str | None = None,
) -> dict[str, str]:
    request = AWSRequest(method="POST", url=URL, data=body)
    SigV4Auth(Credentials(access, secret, token), service, region).add_auth(request)
    return dict(request.headers.items()) | {"Host": "127.0.0.1:4567"}  # sent by any HTTP client


def should_accept_a_request_signed_by_the_key() -> None:
    check_signature("POST", URL, _signed(), b'{"a": 1}', KEY)


def should_accept_a_websocket_connection_signed_as_the_client_signs_it() -> None:
    url = "ws://127.0.0.1:4567/live"
    headers = sign_connect(url, AwsSettings("eu-west-2", None, access_key_id="testing", secret_access_key="testing"))
    check_signature("GET", "http://127.0.0.1:4567/live", headers | {"Host": "127.0.0.1:4567"}, b"", KEY)


@pytest.mark.parametrize(
    ("make_headers", "reason"),
    [
        (dict, "not signed"),
        (lambda: _signed(access="other"), "unknown access key"),
        (lambda: _signed(secret="other"), "does not match"),
        (lambda: _signed(region="us-east-1"), "credential scope"),
        (lambda: _signed(service="s3"), "credential scope"),
        (lambda: _signed(token="a-session-token"), "session tokens"),
        (lambda: _signed(body=b'{"a": 2}'), "does not match"),
        (lambda: {"Authorization": "Basic dXNlcjpwYXNz"}, "not an AWS4-HMAC-SHA256"),
    ],
)
def should_refuse_a_request_not_signed_as_required(make_headers: Callable[[], dict[str, str]], reason: str) -> None:
    # Signed when the test runs, not when it is collected: a signature older than 15 minutes is refused as expired
    headers = make_headers()
    with pytest.raises(SigV4Error, match=reason):
        check_signature("POST", URL, headers, b'{"a": 1}', KEY)


def should_refuse_a_signature_older_than_15_minutes() -> None:
    headers = _signed()
    later = datetime.now(UTC) + timedelta(minutes=16)
    with pytest.raises(SigV4Error, match="expired"):
        check_signature("POST", URL, headers, b'{"a": 1}', KEY, now=later)
