"""The emulated instance's REST API (Sleeper's ``RestApiStack``: an HTTP API with IAM authorisation on every route) on
the loopback address: ``http://127.0.0.1:<port>``, written to ``sleeper.rest.api.url``.

Each request must carry a SigV4 signature for ``execute-api`` by the emulator's credentials
(:mod:`sleeper.adapters.aws.sigv4`), with any ``X-Amz-Content-SHA256`` header holding the SHA-256 of the body
received (:func:`check_payload_hash`), else it is answered 403 as API Gateway answers it, and nothing runs. A
``Content-Length`` that is not one whole number (or a chunked body) is answered 400. A signed
request becomes an HTTP API (payload 2.0) event for the registry's ``rest_api`` handler, invoked through the
``invoke`` callable given (the emulated instance runs it as Lambda would), whose response is returned.
"""

from __future__ import annotations

import base64
import hashlib
import json
import logging
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

from sleeper.adapters.aws import SigningKey, SigV4Error, check_signature

__all__ = ["RestApiServer", "check_payload_hash"]

_LOG = logging.getLogger(__name__)
_MAX_BODY = 10 * 1024 * 1024
"""API Gateway's limit on an HTTP API request's payload."""

_READ_TIMEOUT_SECONDS = 30.0
"""How long a connection may stay silent while its request is read (API Gateway's integration limit)."""

Invoke = Callable[[dict[str, Any]], Any]


class RestApiServer:
    """The REST API on the loopback address (see the module docs).

    Args:
        key: The credentials and region requests must be signed with.
        host: The address to listen on.
        port: The port (0: any free port).
    """

    def __init__(self, key: SigningKey, *, host: str = "127.0.0.1", port: int = 0) -> None:
        self._key = key
        self._invoke: Invoke | None = None
        self._http = ThreadingHTTPServer((host, port), _handler(self))
        self._http.daemon_threads = True
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        """``http://127.0.0.1:<port>``, as ``sleeper.rest.api.url`` holds it."""
        host, port = self._http.server_address[:2]
        return f"http://{host!s}:{port}"

    def start(self) -> None:
        """Serves in a background thread (requests get 503 until :meth:`use`)."""
        self._thread = threading.Thread(target=self._http.serve_forever, name="rest-api", daemon=True)
        self._thread.start()

    def use(self, invoke: Invoke) -> None:
        """Routes requests to a function from now on."""
        self._invoke = invoke

    def stop(self) -> None:
        """Stops serving."""
        self._http.shutdown()
        self._http.server_close()

    def respond(
        self, method: str, target: str, headers: Mapping[str, str], body: bytes
    ) -> tuple[int, dict[str, str], bytes]:
        """One request: the signature checked, then the function's response (status, headers, body)."""
        host = next((v for k, v in headers.items() if k.lower() == "host"), "")
        try:
            check_payload_hash(headers, body)
            check_signature(method, f"http://{host}{target}", headers, body, self._key)
        except SigV4Error as e:
            return 403, {"Content-Type": "application/json", "x-amzn-ErrorType": "ForbiddenException"}, _message(e)
        invoke = self._invoke
        if invoke is None:
            return 503, {"Content-Type": "application/json"}, _message("the emulated instance is not ready")
        parts = urlsplit(target)
        event = {
            "version": "2.0",
            "routeKey": "$default",
            "rawPath": parts.path,
            "rawQueryString": parts.query,
            "headers": {k.lower(): v for k, v in headers.items() if k.lower() != "authorization"},
            "requestContext": {
                "http": {"method": method, "path": parts.path, "protocol": "HTTP/1.1", "sourceIp": "127.0.0.1"},
                "requestId": uuid.uuid4().hex,
                "stage": "$default",
                "timeEpoch": int(time.time() * 1000),
                "authorizer": {"iam": {"accessKey": self._key.access_key_id}},
            },
            "body": base64.b64encode(body).decode("ascii") if body else None,
            "isBase64Encoded": bool(body),
        }
        try:
            response = invoke(event)
        except Exception:
            _LOG.exception("the REST API's function failed on %s %s", method, target)
            return 500, {"Content-Type": "application/json"}, _message("Internal Server Error")
        if not isinstance(response, Mapping):
            return 502, {"Content-Type": "application/json"}, _message("the function returned no response")
        out = response.get("body") or ""
        payload = base64.b64decode(out) if response.get("isBase64Encoded") else str(out).encode("utf-8")
        return int(response.get("statusCode", 200)), dict(response.get("headers") or {}), payload


def check_payload_hash(headers: Mapping[str, str], body: bytes) -> None:
    """Checks that an ``X-Amz-Content-SHA256`` header, if the request has one, is the SHA-256 of the body received.

    A SigV4 signature covers the payload through that header's value when it is present (botocore's signer takes the
    header as the payload's hash rather than hashing the body), so without this check a request signed over one body
    could carry another. API Gateway hashes the body it received; so does this.

    Raises:
        SigV4Error: If the header does not hold the body's SHA-256 (``UNSIGNED-PAYLOAD`` included: API Gateway signs
            every payload).
    """
    claimed = [v for k, v in headers.items() if k.lower() == "x-amz-content-sha256"]
    if not claimed:
        return
    actual = hashlib.sha256(body).hexdigest()
    if len(claimed) > 1 or claimed[0].strip().lower() != actual:
        raise SigV4Error(
            "The request signature we calculated does not match the signature you provided: X-Amz-Content-SHA256 "
            "is not the SHA-256 of the body received"
        )


def _content_length(value: str | None) -> int | None:
    """The body's length a ``Content-Length`` header gives (0 when absent), or None if it is not a length."""
    if value is None:
        return 0
    text = value.strip()
    if not text.isascii() or not text.isdigit():
        return None
    return int(text)


def _message(reason: object) -> bytes:
    return json.dumps({"message": str(reason)}).encode("utf-8")


def _handler(api: RestApiServer) -> type[BaseHTTPRequestHandler]:
    class RestHandler(BaseHTTPRequestHandler):
        timeout = _READ_TIMEOUT_SECONDS

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's name
            _LOG.debug(format, *args)

        def _serve(self) -> None:
            lengths = self.headers.get_all("Content-Length") or []
            length = _content_length(lengths[0]) if len(lengths) == 1 else (0 if not lengths else None)
            if length is None or "Transfer-Encoding" in self.headers:
                self._refuse(400, "Content-Length must be one whole number of bytes (chunked bodies are not accepted)")
                return
            if length > _MAX_BODY:
                self._refuse(413, "Request Entity Too Large")
                return
            try:
                body = self.rfile.read(length) if length else b""
            except OSError:  # the client stopped sending (the read timed out) or went away
                self.close_connection = True
                return
            if len(body) < length:
                self._refuse(400, f"the body ended after {len(body)} of the {length} bytes Content-Length gives")
                return
            self._send(*api.respond(self.command, self.path, dict(self.headers.items()), body))

        def _refuse(self, status: int, reason: str) -> None:
            """Answers without reading the rest of the request, and closes the connection (what is left of the
            request cannot be told from a next one)."""
            self.close_connection = True
            self._send(status, {"Content-Type": "application/json"}, _message(reason))

        def _send(self, status: int, headers: Mapping[str, str], body: bytes) -> None:
            self.send_response(status)
            for name, value in headers.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = _serve  # noqa: N815 - http.server's names

    return RestHandler
