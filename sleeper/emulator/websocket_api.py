"""The emulated instance's WebSocket query API (Sleeper's ``WebSocketQueryStack``) on the loopback address, served with
the ``websockets`` library as API Gateway serves the deployed one:

* ``ws://127.0.0.1:<port>/live`` takes connections. ``$connect`` is IAM-authorised: the upgrade request must carry a
  SigV4 signature by the emulator's credentials for the region and ``execute-api`` (as Sleeper's Python client signs
  it), else it is refused with 403 before anything runs; then the ``$connect`` event goes to the function, whose
  non-2xx answer also refuses the connection.
* Each text message is a ``$default`` route event for the function (a message over API Gateway's 128 KiB is closed
  with 1009, as API Gateway does); closing the socket sends ``$disconnect``. A connection with no message either way
  for API Gateway's idle timeout (10 minutes) is closed with 1001.
* The function is the registry's ``web_socket_query`` handler, loaded and invoked as the pump invokes handlers
  (:mod:`sleeper.emulator.functions`: the function's environment, Lambda's context), in a worker thread so the socket
  keeps flowing while it runs.
* The management API (``PostToConnection``, ``DeleteConnection``) is served over HTTP on a second loopback port,
  SigV4-checked the same way. The events' ``domainName`` names that port, so the query functions' own poster
  (``sleeper.adapters.aws.websocket_api``) posts there exactly as it posts to API Gateway, and each message reaches the
  open socket in frames of at most API Gateway's 32 KiB; a gone connection is answered 410 (``GoneException``).
"""

from __future__ import annotations

import asyncio
import json
import logging
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import TimeoutError as FutureTimeout
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from websockets.asyncio.server import Server, ServerConnection, serve
from websockets.exceptions import ConnectionClosed
from websockets.http11 import Request, Response

from sleeper.adapters.aws import SigningKey, SigV4Error, check_signature
from sleeper.core import FRAME_MAX_BYTES, IDLE_TIMEOUT_SECONDS, MESSAGE_MAX_BYTES, STAGE

__all__ = ["WebSocketApiServer", "frames"]

_LOG = logging.getLogger(__name__)
_CONNECTIONS_PATH = f"/{STAGE}/@connections/"
_POST_TIMEOUT_SECONDS = 30.0

Invoke = Callable[[dict[str, Any]], Any]
"""Invokes the API's function with one route event and returns its response."""


def frames(data: str, limit: int = FRAME_MAX_BYTES) -> Iterator[str]:
    """A message cut into frames of at most ``limit`` UTF-8 bytes, never inside a character."""
    encoded = data.encode("utf-8")
    start = 0
    while start < len(encoded):
        end = min(start + limit, len(encoded))
        while end < len(encoded) and (encoded[end] & 0xC0) == 0x80:  # a continuation byte: back to its lead
            end -= 1
        yield encoded[start:end].decode("utf-8")
        start = end


class WebSocketApiServer:
    """The WebSocket API and its management API on the loopback address (see the module docs).

    Args:
        key: The credentials and region requests must be signed with.
        host: The address to listen on.
        port: The WebSocket port (0: any free port).
        management_port: The management API's port (0: any free port).
        idle_timeout_seconds: How long a connection may pass no message before it is closed.
    """

    def __init__(
        self,
        key: SigningKey,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        management_port: int = 0,
        idle_timeout_seconds: float = IDLE_TIMEOUT_SECONDS,
    ) -> None:
        self._key = key
        self._idle_timeout = idle_timeout_seconds
        self._activity: dict[str, float] = {}
        self._host = host
        self._port = port
        self._management_port = management_port
        self._invoke: Invoke | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._server: Server | None = None
        self._thread: threading.Thread | None = None
        self._http: ThreadingHTTPServer | None = None
        self._http_thread: threading.Thread | None = None
        self._connections: dict[str, ServerConnection] = {}
        self._ids: dict[ServerConnection, str] = {}
        self._lock = threading.Lock()

    # --- lifecycle -----------------------------------------------------------------------------------------------
    def start(self) -> None:
        """Binds both ports and serves them in background threads (events are refused until :meth:`use`)."""
        self._http = ThreadingHTTPServer((self._host, self._management_port), _management_handler(self))
        self._http.daemon_threads = True
        self._http_thread = threading.Thread(target=self._http.serve_forever, name="websocket-management", daemon=True)
        self._http_thread.start()
        ready = threading.Event()
        failure: list[BaseException] = []
        self._thread = threading.Thread(target=self._run_loop, args=(ready, failure), name="websocket-api", daemon=True)
        self._thread.start()
        ready.wait()
        if failure:
            self.stop()
            raise failure[0]

    def use(self, invoke: Invoke) -> None:
        """Routes the API's events to a function from now on."""
        self._invoke = invoke

    def stop(self) -> None:
        """Closes every connection and stops serving."""
        loop, server = self._loop, self._server
        if loop is not None and server is not None and loop.is_running():
            asyncio.run_coroutine_threadsafe(self._close(server), loop).result(timeout=10)
        if self._thread is not None:
            self._thread.join(timeout=10)
        if self._http is not None:
            self._http.shutdown()
            self._http.server_close()
        self._loop = self._server = self._thread = self._http = None

    async def _close(self, server: Server) -> None:
        server.close()
        await server.wait_closed()

    def _run_loop(self, ready: threading.Event, failure: list[BaseException]) -> None:
        loop = asyncio.new_event_loop()
        self._loop = loop
        try:
            self._server = loop.run_until_complete(self._serve())
        except BaseException as e:  # a taken port: reported by start()
            failure.append(e)
            ready.set()
            loop.close()
            return
        ready.set()
        try:
            loop.run_until_complete(self._server.wait_closed())
        finally:
            loop.close()

    async def _serve(self) -> Server:
        return await serve(
            self._connection,
            self._host,
            self._port,
            process_request=self._authorise,
            max_size=MESSAGE_MAX_BYTES,
            ping_interval=None,  # API Gateway does not ping clients
        )

    # --- addresses -----------------------------------------------------------------------------------------------
    @property
    def url(self) -> str:
        """The API's URL, as ``sleeper.query.websocket.api.url`` holds it: ``ws://127.0.0.1:<port>/live``."""
        if self._server is None:
            raise RuntimeError("the WebSocket API is not started")
        host, port = self._server.sockets[0].getsockname()[:2]
        return f"ws://{host}:{port}/{STAGE}"

    @property
    def management_domain(self) -> str:
        """The management API's ``host:port``, given to the function as the events' ``domainName``."""
        if self._http is None:
            raise RuntimeError("the WebSocket API is not started")
        host, port = self._http.server_address[:2]
        return f"{host!s}:{port}"

    # --- the API -------------------------------------------------------------------------------------------------
    async def _authorise(self, connection: ServerConnection, request: Request) -> Response | None:
        """``$connect``: the stage's path, a valid signature, then the function's answer."""
        if request.path.split("?", 1)[0] != f"/{STAGE}":
            return connection.respond(404, f"no stage at {request.path}: connect to /{STAGE}\n")
        host = request.headers.get("Host", "")
        try:
            check_signature("GET", f"http://{host}{request.path}", dict(request.headers.raw_items()), b"", self._key)
        except SigV4Error as e:
            _LOG.info("WebSocket connection refused: %s", e)
            return connection.respond(403, f"Forbidden: {e}\n")
        connection_id = uuid.uuid4().hex
        response = await self._route("CONNECT", "$connect", connection_id, None, dict(request.headers.raw_items()))
        status = response.get("statusCode", 200) if isinstance(response, Mapping) else 200
        if not 200 <= int(status) < 300:
            return connection.respond(int(status), f"{response.get('body') or 'refused by the function'}\n")
        with self._lock:
            self._connections[connection_id] = connection
            self._ids[connection] = connection_id
        return None

    async def _connection(self, connection: ServerConnection) -> None:
        connection_id = self._ids[connection]
        self._activity[connection_id] = time.monotonic()
        watchdog = asyncio.create_task(self._close_when_idle(connection, connection_id))
        try:
            async for message in connection:
                self._activity[connection_id] = time.monotonic()
                body = message if isinstance(message, str) else message.decode("utf-8", errors="replace")
                await self._route("MESSAGE", "$default", connection_id, body, None)
        except ConnectionClosed:
            pass
        finally:
            watchdog.cancel()
            with self._lock:
                self._connections.pop(connection_id, None)
                self._ids.pop(connection, None)
            self._activity.pop(connection_id, None)
            await self._route("DISCONNECT", "$disconnect", connection_id, None, None)

    async def _close_when_idle(self, connection: ServerConnection, connection_id: str) -> None:
        while (last := self._activity.get(connection_id)) is not None:
            remaining = last + self._idle_timeout - time.monotonic()
            if remaining <= 0:
                await connection.close(1001, "Going away: idle timeout")
                return
            await asyncio.sleep(remaining)

    async def _route(
        self, kind: str, route: str, connection_id: str, body: str | None, headers: Mapping[str, str] | None
    ) -> Any:
        invoke = self._invoke
        if invoke is None:
            return {"statusCode": 503, "body": "the emulated instance is not ready"}
        event: dict[str, Any] = {
            "requestContext": {
                "routeKey": route,
                "eventType": kind,
                "connectionId": connection_id,
                "domainName": self.management_domain,
                "stage": STAGE,
                "apiId": "emulated",
                "requestId": uuid.uuid4().hex,
                "requestTimeEpoch": int(time.time() * 1000),
                "identity": {"sourceIp": self._host},
            },
            "isBase64Encoded": False,
        }
        if body is not None:
            event["body"] = body
        if headers is not None:
            event["headers"] = {k: v for k, v in headers.items() if k.lower() != "authorization"}
        try:
            return await asyncio.to_thread(invoke, event)
        except Exception:
            _LOG.exception("the WebSocket API's function failed on %s of %s", route, connection_id)
            return {"statusCode": 500, "body": "Internal server error"}

    # --- the management API --------------------------------------------------------------------------------------
    def post_to_connection(self, connection_id: str, data: str) -> int:
        """Sends a message to an open connection in frames of at most 32 KiB; returns the HTTP status (200, 410 for
        a gone connection)."""
        with self._lock:
            connection = self._connections.get(connection_id)
        loop = self._loop
        if connection is None or loop is None:
            return 410
        future = asyncio.run_coroutine_threadsafe(self._send(connection, data), loop)
        try:
            return 200 if future.result(timeout=_POST_TIMEOUT_SECONDS) else 410
        except FutureTimeout:
            future.cancel()
            return 504

    async def _send(self, connection: ServerConnection, data: str) -> bool:
        try:
            chunks = list(frames(data))
            await connection.send(chunks[0] if len(chunks) == 1 else chunks)
            connection_id = self._ids.get(connection)
            if connection_id is not None:
                self._activity[connection_id] = time.monotonic()
            return True
        except ConnectionClosed:
            return False

    def delete_connection(self, connection_id: str) -> int:
        """Closes an open connection; returns the HTTP status (204, 410 for a gone connection)."""
        with self._lock:
            connection = self._connections.get(connection_id)
        if connection is None or self._loop is None:
            return 410
        asyncio.run_coroutine_threadsafe(connection.close(), self._loop).result(timeout=_POST_TIMEOUT_SECONDS)
        return 204

    def check(self, method: str, path: str, headers: Mapping[str, str], body: bytes) -> None:
        """Checks a management API request's signature (raises :class:`SigV4Error`)."""
        host = headers.get("Host") or headers.get("host") or self.management_domain
        check_signature(method, f"http://{host}{path}", headers, body, self._key)


def _management_handler(api: WebSocketApiServer) -> type[BaseHTTPRequestHandler]:
    class ManagementHandler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's name
            _LOG.debug(format, *args)

        def _connection_id(self) -> str | None:
            path = self.path.split("?", 1)[0]
            if not path.startswith(_CONNECTIONS_PATH) and not path.startswith(f"/{STAGE}/%40connections/"):
                return None
            from urllib.parse import unquote

            return unquote(path.rsplit("/", 1)[1]) or None

        def _answer(self, status: int, error: str | None = None, message: str = "") -> None:
            payload = json.dumps({"message": message}).encode() if error else b""
            self.send_response(status)
            if error:
                self.send_header("x-amzn-ErrorType", error)
                self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def _authorised(self, body: bytes) -> bool:
            try:
                api.check(self.command, self.path, dict(self.headers.items()), body)
            except SigV4Error as e:
                self._answer(403, "ForbiddenException", str(e))
                return False
            return True

        def do_POST(self) -> None:  # noqa: N802 - http.server's name
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            if not self._authorised(body):
                return
            connection_id = self._connection_id()
            if connection_id is None:
                self._answer(404, "NotFoundException", f"no route for POST {self.path}")
            elif len(body) > MESSAGE_MAX_BYTES:
                self._answer(413, "PayloadTooLargeException", f"{len(body)} bytes is over {MESSAGE_MAX_BYTES}")
            else:
                status = api.post_to_connection(connection_id, body.decode("utf-8"))
                if status == 410:
                    self._answer(410, "GoneException", f"connection {connection_id} is gone")
                elif status != 200:
                    self._answer(status, "InternalServerErrorException", "the post timed out")
                else:
                    self._answer(200)

        def do_DELETE(self) -> None:  # noqa: N802 - http.server's name
            if not self._authorised(b""):
                return
            connection_id = self._connection_id()
            if connection_id is None:
                self._answer(404, "NotFoundException", f"no route for DELETE {self.path}")
            elif api.delete_connection(connection_id) == 410:
                self._answer(410, "GoneException", f"connection {connection_id} is gone")
            else:
                self._answer(204)

    return ManagementHandler
