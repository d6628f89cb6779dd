"""The emulated REST API's front door (``sleeper.emulator.rest_api.RestApiServer``) checks requests as API Gateway
does before anything runs: a body swapped under a signed ``X-Amz-Content-SHA256`` is refused with 403, and a
``Content-Length`` that is not one whole number of bytes, or larger than the body sent, gets 400."""

from __future__ import annotations

import hashlib
import http.client
import json
import socket
from collections.abc import Iterator
from typing import Any

import pytest
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

from sleeper.adapters.aws.sigv4 import SigningKey
from sleeper.emulator.rest_api import RestApiServer

pytestmark = pytest.mark.integration

KEY = SigningKey("testing", "secret", "eu-west-2")


@pytest.fixture
def server() -> Iterator[tuple[RestApiServer, list[dict[str, Any]]]]:
    """The server, with a function recording each event it is invoked with."""
    invoked: list[dict[str, Any]] = []
    api = RestApiServer(KEY)
    api.start()

    def invoke(event: dict[str, Any]) -> dict[str, Any]:
        invoked.append(event)
        return {"statusCode": 200, "body": "{}"}

    api.use(invoke)
    yield api, invoked
    api.stop()


def _signed(api: RestApiServer, body: bytes, *, content_hash: bool) -> dict[str, str]:
    request = AWSRequest(method="POST", url=f"{api.url}/sleeper/tables", data=body)
    if content_hash:
        request.headers["X-Amz-Content-SHA256"] = hashlib.sha256(body).hexdigest()
    SigV4Auth(Credentials(KEY.access_key_id, KEY.secret_access_key), "execute-api", KEY.region).add_auth(request)
    return dict(request.headers.items())


def _post(api: RestApiServer, headers: dict[str, str], body: bytes) -> tuple[int, dict[str, Any]]:
    host, port = api.url.removeprefix("http://").split(":")
    connection = http.client.HTTPConnection(host, int(port), timeout=10)
    try:
        connection.request("POST", "/sleeper/tables", body=body, headers=headers)
        response = connection.getresponse()
        return response.status, json.loads(response.read() or b"{}")
    finally:
        connection.close()


@pytest.mark.parametrize("content_hash", [True, False])
def should_run_a_request_signed_over_its_body(
    server: tuple[RestApiServer, list[dict[str, Any]]], content_hash: bool
) -> None:
    api, invoked = server
    body = b'{"properties": {"sleeper.table.name": "mine"}}'
    assert _post(api, _signed(api, body, content_hash=content_hash), body)[0] == 200
    assert len(invoked) == 1


@pytest.mark.parametrize("content_hash", [True, False])
def should_refuse_a_body_swapped_under_a_signature(
    server: tuple[RestApiServer, list[dict[str, Any]]], content_hash: bool
) -> None:
    # Given a request signed over one body (with or without the payload's hash as a signed header)
    api, invoked = server
    signed_over = b'{"properties": {"sleeper.table.name": "mine"}}'
    headers = _signed(api, signed_over, content_hash=content_hash)
    # When another body of the same length is sent under its headers
    swapped = b'{"properties": {"sleeper.table.name": "evil"}}'
    status, answer = _post(api, headers, swapped)
    # Then it is refused as API Gateway refuses it, and the function never runs
    assert status == 403 and "signature" in answer["message"]
    assert invoked == []


def _raw(api: RestApiServer, head: str, body: bytes = b"") -> tuple[int, dict[str, Any]]:
    host, port = api.url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=10) as raw:
        raw.sendall(head.encode("ascii") + b"\r\n" + body)
        raw.shutdown(socket.SHUT_WR)
        received = b""
        while chunk := raw.recv(65536):
            received += chunk
    status_line, _, rest = received.partition(b"\r\n")
    return int(status_line.split()[1]), json.loads(rest.partition(b"\r\n\r\n")[2] or b"{}")


@pytest.mark.parametrize(
    ("content_length", "body"),
    [("abc", b"{}"), ("-5", b"{}"), ("1e3", b"{}"), ("5, 5", b"{}"), ("100", b"{}")],
)
def should_answer_400_to_a_content_length_that_is_not_the_bodys(
    server: tuple[RestApiServer, list[dict[str, Any]]], content_length: str, body: bytes
) -> None:
    api, invoked = server
    head = f"POST /sleeper/tables HTTP/1.1\r\nHost: x\r\nContent-Length: {content_length}\r\n"
    status, answer = _raw(api, head, body)
    assert status == 400 and "Content-Length" in answer["message"]
    assert invoked == []
