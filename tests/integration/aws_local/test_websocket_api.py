"""The emulated instance's WebSocket query API: ``sleeper.query.websocket.api.url`` names it; a connection
signed as Sleeper's Python client signs it (SigV4 of ``GET <path>`` with the host header, service ``execute-api``) is
accepted, an unsigned or wrongly signed one refused with 403; a query sent over it is planned by the registry's
handler, the pump runs the sub-queries, and their rows and status messages come back over the socket through the
management API.

Sleeper's Python client (``sleeper.web_socket_query`` in gchq/sleeper) is not installable beside this package (both
are imported as ``sleeper``), so :func:`_sleeper_client_query` speaks its wire protocol, written here from its
behaviour: the signed headers on the upgrade request, the query JSON as the first message, rows gathered from
``rows`` messages until the first ``completed`` or ``error``. :func:`_query_all` follows Sleeper's Java client instead
(it waits for every sub-query's ``completed``), which a query over several leaves needs.
"""

from __future__ import annotations

import asyncio
import datetime
import hashlib
import hmac
import json
import threading
import urllib.parse
import uuid
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import InvalidStatus

from sleeper.adapters.aws.websocket_api import ApiGatewayWebSocketPoster
from sleeper.core.properties import instance_cdk as cdkp
from sleeper.core.schema import Field, PrimitiveType, Schema
from sleeper.core.websocket import FRAME_MAX_BYTES, MESSAGE_MAX_BYTES, ConnectionGoneError, WebSocketTarget
from sleeper.emulator.instance import EmulatedAwsInstance
from sleeper.emulator.pump import Pump
from sleeper.emulator.websocket_api import frames

pytestmark = [pytest.mark.integration, pytest.mark.aws]

SCHEMA = Schema.of(row_keys=[Field("key", PrimitiveType.LONG)], values=[Field("value", PrimitiveType.STRING)])
ROWS = 8_000


@pytest.fixture(scope="module")
def table(emulated: EmulatedAwsInstance) -> str:
    """A table of four leaves holding 8,000 rows of ~250 bytes (~2 MB)."""
    name = f"ws-{uuid.uuid4().hex[:8]}"
    created = emulated.instance().create_table(name, SCHEMA, split_points=[2000, 4000, 6000])
    created.ingest(pa.table({"key": pa.array(range(ROWS), pa.int64()), "value": ["v" * 250] * ROWS}), direct=True)
    return name


@pytest.fixture
def answering(emulated: EmulatedAwsInstance) -> Iterator[Pump]:
    """The pump running in a thread, so sub-queries are run while a client waits on its socket."""
    pump = emulated.pump()
    stop = threading.Event()
    thread = threading.Thread(target=pump.run_forever, args=(stop,), kwargs={"interval_seconds": 0.1}, daemon=True)
    thread.start()
    yield pump
    stop.set()
    thread.join(timeout=60)
    pump.close()


def _signed_headers(url: str, region: str, access_key: str, secret_key: str) -> dict[str, str]:
    """The headers Sleeper's Python client puts on the upgrade request: SigV4 of ``GET <path>``, host signed."""
    now = datetime.datetime.now(datetime.UTC)
    amz_date, date_stamp = now.strftime("%Y%m%dT%H%M%SZ"), now.strftime("%Y%m%d")
    parsed = urllib.parse.urlparse(url)
    canonical = f"GET\n{parsed.path}\n\nhost:{parsed.netloc}\n\nhost\n{hashlib.sha256(b'').hexdigest()}"
    scope = f"{date_stamp}/{region}/execute-api/aws4_request"
    to_sign = f"AWS4-HMAC-SHA256\n{amz_date}\n{scope}\n{hashlib.sha256(canonical.encode()).hexdigest()}"
    key = f"AWS4{secret_key}".encode()
    for part in (date_stamp, region, "execute-api", "aws4_request"):
        key = hmac.new(key, part.encode(), hashlib.sha256).digest()
    signature = hmac.new(key, to_sign.encode(), hashlib.sha256).hexdigest()
    authorization = f"AWS4-HMAC-SHA256 Credential={access_key}/{scope}, SignedHeaders=host, Signature={signature}"
    return {"X-Amz-Date": amz_date, "Authorization": authorization}


def _url_and_headers(emulated: EmulatedAwsInstance, secret: str = "testing") -> tuple[str, dict[str, str]]:
    url = emulated.instance().properties.get(cdkp.QUERY_WEBSOCKET_API_URL.name)
    assert url
    return url, _signed_headers(url, emulated.region, "testing", secret)


def _query(query_id: str, table: str, region: dict[str, Any]) -> str:
    return json.dumps({"queryId": query_id, "tableName": table, "type": "Query", "regions": [region]})


async def _sleeper_client_query(emulated: EmulatedAwsInstance, query: str) -> list[dict[str, Any]]:
    """Sleeper's Python client's ``process_query``: rows until the first completed or error message."""
    url, headers = _url_and_headers(emulated)
    rows: list[dict[str, Any]] = []
    async with connect(url, additional_headers=headers) as socket:
        await socket.send(query)
        while True:
            message = json.loads(await asyncio.wait_for(socket.recv(), timeout=60))
            if message["message"] in ("completed", "error"):
                break
            if message["message"] == "rows":
                rows.extend(message["rows"])
    return rows


async def _query_all(emulated: EmulatedAwsInstance, query: str) -> tuple[list[dict[str, Any]], list[str], int]:
    """Sleeper's Java client: every message until each (sub-)query is completed; returns them, the raw messages and
    the close code after the client closes."""
    url, headers = _url_and_headers(emulated)
    outstanding = {json.loads(query)["queryId"]}
    messages: list[dict[str, Any]] = []
    raw: list[str] = []
    async with connect(url, additional_headers=headers) as socket:
        await socket.send(query)
        while outstanding:
            data = await asyncio.wait_for(socket.recv(), timeout=60)
            raw.append(str(data))
            message = json.loads(data)
            messages.append(message)
            if message["message"] == "subqueries":
                outstanding |= set(message["queryIds"])
            if message["message"] in ("subqueries", "completed", "error"):
                outstanding.discard(message["queryId"])
            if message["message"] == "error":
                break
    return messages, raw, socket.close_code or 0


def should_name_the_api_in_the_instance_properties(emulated: EmulatedAwsInstance) -> None:
    url = emulated.instance().properties.get(cdkp.QUERY_WEBSOCKET_API_URL.name)
    assert url == emulated.websocket_url and url.startswith("ws://127.0.0.1:") and url.endswith("/live")


@pytest.mark.parametrize("signed", ["unsigned", "wrong secret"])
def should_refuse_a_connection_not_signed_by_the_emulators_credentials(
    emulated: EmulatedAwsInstance, signed: str
) -> None:
    url, headers = _url_and_headers(emulated, secret="not-the-secret")
    if signed == "unsigned":
        headers = {}

    async def attempt() -> None:
        async with connect(url, additional_headers=headers):
            pass

    with pytest.raises(InvalidStatus) as refused:
        asyncio.run(attempt())
    assert refused.value.response.status_code == 403


def should_return_what_an_exact_key_query_returns_to_sleepers_python_client(
    emulated: EmulatedAwsInstance, table: str, answering: Pump
) -> None:
    # When Sleeper's Python client asks for one key over the socket
    region = {"key": {"min": 4321, "minInclusive": True, "max": 4321, "maxInclusive": True}}
    rows = asyncio.run(_sleeper_client_query(emulated, _query("ws-exact", table, region)))
    # Then it gets what the table's exact query returns
    assert rows == emulated.instance().table(table).exact(key=4321).to_pylist() == [{"key": 4321, "value": "v" * 250}]


def should_return_the_rows_of_a_range_over_four_leaves_as_a_direct_query_does(
    emulated: EmulatedAwsInstance, table: str, answering: Pump
) -> None:
    # When a range over all four leaves (~2 MB of rows) is queried over the socket
    region = {"key": {"min": 100, "minInclusive": True, "max": 7900, "maxInclusive": False}}
    messages, raw, close_code = asyncio.run(_query_all(emulated, _query("ws-range", table, region)))
    # Then the query was split into four sub-queries, each completed
    (split,) = [m for m in messages if m["message"] == "subqueries"]
    assert len(split["queryIds"]) == 4
    assert sorted(m["queryId"] for m in messages if m["message"] == "completed") == sorted(split["queryIds"])
    # And the rows are exactly the direct query's, in many messages none over API Gateway's limit
    rows = [row for m in messages if m["message"] == "rows" for row in m["rows"]]
    direct = emulated.instance().table(table).range(100, 7900).to_pylist()
    assert sorted(rows, key=lambda r: r["key"]) == direct and len(direct) == 7800
    assert len([m for m in messages if m["message"] == "rows"]) > 10
    assert max(len(data.encode()) for data in raw) <= MESSAGE_MAX_BYTES
    assert close_code == 1000


def should_send_the_error_of_an_unknown_table_and_close_cleanly(emulated: EmulatedAwsInstance) -> None:
    # When a query names no table of the instance
    region = {"key": {"min": 0, "minInclusive": True, "max": 10, "maxInclusive": False}}
    messages, _, close_code = asyncio.run(_query_all(emulated, _query("ws-unknown", "no-such-table", region)))
    # Then the client gets one error message naming the table, and the socket closes cleanly
    (message,) = messages
    assert message["message"] == "error" and message["queryId"] == "ws-unknown"
    assert "no-such-table" in message["error"]
    assert close_code == 1000


def should_refuse_posts_to_gone_connections_and_unsigned_posts(emulated: EmulatedAwsInstance) -> None:
    # Given the management API the query functions post through
    domain = emulated._websocket.management_domain  # noqa: SLF001 - where the events point the functions
    target = WebSocketTarget(endpoint=f"http://{domain}/live", connection_id="gone")
    # When a function posts to a connection that is not open, it is told the connection is gone
    poster = ApiGatewayWebSocketPoster(emulated.settings)
    with pytest.raises(ConnectionGoneError):
        poster.post(target, '{"message": "rows"}', attempts=1, base_delay=0.1, max_delay=0.1)
    # And an unsigned post is refused
    import urllib.request

    request = urllib.request.Request(f"http://{domain}/live/@connections/gone", data=b"{}", method="POST")
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(request, timeout=10)
    refused.value.close()
    assert refused.value.code == 403


def should_cut_messages_into_frames_within_the_limit() -> None:
    # Given a message of API Gateway's maximum size, with multi-byte characters across frame boundaries
    message = ("é" * 1000 + "x") * 65
    assert len(message.encode()) <= MESSAGE_MAX_BYTES
    # When it is cut into frames
    cut = list(frames(message))
    # Then each frame is within 32 KiB, whole characters, and together they are the message
    assert len(cut) == 4 and all(len(f.encode()) <= FRAME_MAX_BYTES for f in cut)
    assert "".join(cut) == message
