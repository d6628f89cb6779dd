"""Where a query's results and status go: its ``resultsPublisherConfig`` and ``statusReportDestinations`` read
strictly, as Sleeper's leaf query processor reads them (Sleeper's ``S3ResultsOutput``,
``SQSResultsOutput``, ``WebSocketOutput``).

Results destinations (``"destination"``; an empty config means the default S3 results location):

* ``S3``: ``bucket`` (default: the instance's results bucket), ``compressionCodec`` (default: the table's codec),
  ``rowGroupSize`` and ``pageSize`` in bytes (default: ``sleeper.default.query.results.rowgroup.size`` and
  ``.page.size``);
* ``SQS``: ``sqsResultsUrl`` (default: the instance's results queue), ``batchSize`` rows per message (default:
  ``sleeper.query.processor.results.batch.size``);
* ``WEBSOCKET``: ``webSocketManagementApiEndpoint`` and ``webSocketConnectionId`` (set by the WebSocket API's
  handler), ``webSocketManagementApiRegion``, ``maxBatchSize`` rows per message, ``webSocketPublishMaxAttempts``,
  ``webSocketThrottlingRetryBaseDelaySecs``, ``webSocketThrottlingRetryMaxDelaySecs``;
* ``NO_RESULTS_OUTPUT``: the rows are read and dropped (warm-up queries).

Anything else is refused with :class:`ResultsConfigError`, naming the key: an unknown destination or key, a number
that is not a positive integer, and credentials (``awsAccessKey``, ``awsSecretKey``), which this port never takes
from a message (the function's own role posts to the connection). A WebSocket management endpoint must be an
``https`` URL (``http`` only on the loopback address, where the emulated instance serves it), so a query cannot make
the functions post signed requests to a plain-text remote host.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import urlsplit

from sleeper.core import SleeperError, WebSocketTarget

__all__ = [
    "DESTINATION",
    "NO_RESULTS_OUTPUT",
    "S3",
    "SQS",
    "WEBSOCKET",
    "NoResults",
    "ResultsConfigError",
    "ResultsDestination",
    "S3Results",
    "SqsResults",
    "WebSocketResults",
    "WebSocketTarget",
    "check_management_endpoint",
    "read_results_config",
    "read_status_destinations",
]

DESTINATION = "destination"
S3 = "S3"
SQS = "SQS"
WEBSOCKET = "WEBSOCKET"
NO_RESULTS_OUTPUT = "NO_RESULTS_OUTPUT"
DYNAMODB = "DYNAMODB"

ENDPOINT = "webSocketManagementApiEndpoint"
CONNECTION_ID = "webSocketConnectionId"
REGION = "webSocketManagementApiRegion"
MAX_BATCH_SIZE = "maxBatchSize"
MAX_ATTEMPTS = "webSocketPublishMaxAttempts"
BASE_DELAY = "webSocketThrottlingRetryBaseDelaySecs"
MAX_DELAY = "webSocketThrottlingRetryMaxDelaySecs"
_CREDENTIAL_KEYS = frozenset({"awsAccessKey", "awsSecretKey"})
_LOOPBACK = frozenset({"127.0.0.1", "localhost", "::1"})

_S3_KEYS = frozenset({DESTINATION, "bucket", "compressionCodec", "rowGroupSize", "pageSize"})
_SQS_KEYS = frozenset({DESTINATION, "sqsResultsUrl", "batchSize"})
_WEBSOCKET_KEYS = frozenset(
    {DESTINATION, ENDPOINT, CONNECTION_ID, REGION, MAX_BATCH_SIZE, MAX_ATTEMPTS, BASE_DELAY, MAX_DELAY}
)
_NO_RESULTS_KEYS = frozenset({DESTINATION})
_STATUS_WEBSOCKET_KEYS = frozenset({DESTINATION, ENDPOINT, CONNECTION_ID, REGION})


class ResultsConfigError(SleeperError):
    """A query's results publisher config or status report destinations cannot be honoured; the message names the
    key and what to do."""


@dataclass(frozen=True, slots=True, kw_only=True)
class S3Results:
    """Results as one Parquet file per sub-query.

    Attributes:
        bucket: The bucket to write to; None for the instance's results location.
        compression_codec: The Parquet codec; None for the table's.
        row_group_bytes: The row group size in bytes; None for the instance default.
        page_bytes: The page size in bytes; None for the instance default.
    """

    bucket: str | None = None
    compression_codec: str | None = None
    row_group_bytes: int | None = None
    page_bytes: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class SqsResults:
    """Results as JSON messages of at most ``batch_size`` rows on a queue.

    Attributes:
        queue_url: The queue named by the query; None for the instance's results queue.
        batch_size: Rows per message; None for the instance's ``sleeper.query.processor.results.batch.size``.
    """

    queue_url: str | None = None
    batch_size: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class WebSocketResults:
    """Results posted to a WebSocket connection in ``rows`` messages.

    Attributes:
        target: The connection.
        max_batch_size: The most rows in one message (messages are also kept under the payload limit).
        max_attempts: Attempts to post a message when throttled.
        base_delay_seconds: The first wait before retrying a throttled post.
        max_delay_seconds: The longest wait before retrying a throttled post.
    """

    target: WebSocketTarget
    max_batch_size: int | None = None
    max_attempts: int = 7
    base_delay_seconds: float = 0.5
    max_delay_seconds: float = 20.0


@dataclass(frozen=True, slots=True, kw_only=True)
class NoResults:
    """The rows are read and dropped."""


ResultsDestination = S3Results | SqsResults | WebSocketResults | NoResults


def read_results_config(config: Mapping[str, str]) -> ResultsDestination:
    """The results destination a query's ``resultsPublisherConfig`` asks for (see the module docs).

    Raises:
        ResultsConfigError: If the destination or a key is unknown, or a value is not valid.
    """
    if not config:
        return S3Results()
    destination = config.get(DESTINATION)
    if destination is None:
        raise ResultsConfigError(
            f'resultsPublisherConfig has no "{DESTINATION}": give one of {S3}, {SQS}, {WEBSOCKET}, {NO_RESULTS_OUTPUT}'
        )
    if destination == S3:
        _check_keys(config, _S3_KEYS, S3)
        return S3Results(
            bucket=_text(config, "bucket"),
            compression_codec=_text(config, "compressionCodec"),
            row_group_bytes=_positive_int(config, "rowGroupSize"),
            page_bytes=_positive_int(config, "pageSize"),
        )
    if destination == SQS:
        _check_keys(config, _SQS_KEYS, SQS)
        return SqsResults(queue_url=_text(config, "sqsResultsUrl"), batch_size=_positive_int(config, "batchSize"))
    if destination == WEBSOCKET:
        _check_keys(config, _WEBSOCKET_KEYS, WEBSOCKET)
        attempts = _positive_int(config, MAX_ATTEMPTS)
        base = _positive_float(config, BASE_DELAY)
        most = _positive_float(config, MAX_DELAY)
        return WebSocketResults(
            target=_websocket_target(config, "resultsPublisherConfig"),
            max_batch_size=_positive_int(config, MAX_BATCH_SIZE),
            max_attempts=7 if attempts is None else attempts,
            base_delay_seconds=0.5 if base is None else base,
            max_delay_seconds=20.0 if most is None else most,
        )
    if destination == NO_RESULTS_OUTPUT:
        _check_keys(config, _NO_RESULTS_KEYS, NO_RESULTS_OUTPUT)
        return NoResults()
    raise ResultsConfigError(
        f"unknown results destination {destination!r}: give one of {S3}, {SQS}, {WEBSOCKET}, {NO_RESULTS_OUTPUT}"
    )


def read_status_destinations(destinations: tuple[Mapping[str, str], ...]) -> tuple[WebSocketTarget, ...]:
    """The WebSocket connections a query's ``statusReportDestinations`` ask status messages to go to.

    ``{"destination": "DYNAMODB"}`` names the query tracker, which every query reports to anyway.

    Raises:
        ResultsConfigError: If a destination or key is unknown or a WebSocket destination is incomplete.
    """
    targets: list[WebSocketTarget] = []
    for i, item in enumerate(destinations):
        where = f"statusReportDestinations[{i}]"
        destination = item.get(DESTINATION)
        if destination == DYNAMODB:
            _check_keys(item, frozenset({DESTINATION}), DYNAMODB, where=where)
        elif destination == WEBSOCKET:
            _check_keys(item, _STATUS_WEBSOCKET_KEYS, WEBSOCKET, where=where)
            targets.append(_websocket_target(item, where))
        else:
            raise ResultsConfigError(
                f"{where}: unknown status report destination {destination!r}: give {DYNAMODB} or {WEBSOCKET}"
            )
    return tuple(targets)


def check_management_endpoint(endpoint: str, *, where: str = ENDPOINT) -> str:
    """The endpoint, if it is an ``https`` URL, or ``http`` on the loopback address.

    Raises:
        ResultsConfigError: If it is not.
    """
    parts = urlsplit(endpoint)
    secure = parts.scheme == "https" and bool(parts.hostname)
    loopback = parts.scheme == "http" and parts.hostname in _LOOPBACK
    if not (secure or loopback) or parts.query or parts.fragment or parts.username or parts.password:
        raise ResultsConfigError(
            f"{where} must be the https URL of a WebSocket API's stage (http only on the loopback address), "
            f"got {endpoint!r}"
        )
    return endpoint.rstrip("/")


def _websocket_target(config: Mapping[str, str], where: str) -> WebSocketTarget:
    endpoint = _text(config, ENDPOINT)
    connection_id = _text(config, CONNECTION_ID)
    if endpoint is None or connection_id is None:
        raise ResultsConfigError(
            f"{where}: a {WEBSOCKET} destination needs {ENDPOINT} and {CONNECTION_ID} (the WebSocket API's handler "
            "sets them: send the query over the WebSocket API)"
        )
    return WebSocketTarget(
        endpoint=check_management_endpoint(endpoint, where=f"{where}.{ENDPOINT}"),
        connection_id=connection_id,
        region=_text(config, REGION),
    )


def _check_keys(config: Mapping[str, str], allowed: frozenset[str], destination: str, *, where: str = "") -> None:
    prefix = f"{where}: " if where else ""
    credentials = sorted(set(config) & _CREDENTIAL_KEYS)
    if credentials:
        raise ResultsConfigError(
            f"{prefix}{', '.join(credentials)} is not accepted: credentials are never taken from a query; the "
            "query functions post with their own role"
        )
    unknown = sorted(set(config) - allowed)
    if unknown:
        raise ResultsConfigError(
            f"{prefix}{', '.join(unknown)} is not a setting of the {destination} destination "
            f"(it takes {', '.join(sorted(allowed - {DESTINATION})) or 'none'})"
        )


def _text(config: Mapping[str, str], key: str) -> str | None:
    value = config.get(key)
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        raise ResultsConfigError(f"{key} must be a non-empty string, got {value!r}")
    return value.strip()


def _positive_int(config: Mapping[str, str], key: str) -> int | None:
    value = _text(config, key)
    if value is None:
        return None
    try:
        number = int(value)
    except ValueError:
        raise ResultsConfigError(f"{key} must be a positive whole number, got {value!r}") from None
    if number < 1:
        raise ResultsConfigError(f"{key} must be a positive whole number, got {value!r}")
    return number


def _positive_float(config: Mapping[str, str], key: str) -> float | None:
    value = _text(config, key)
    if value is None:
        return None
    try:
        number = float(value)
    except ValueError:
        raise ResultsConfigError(f"{key} must be a positive number of seconds, got {value!r}") from None
    if not number > 0 or number == float("inf"):
        raise ResultsConfigError(f"{key} must be a positive number of seconds, got {value!r}")
    return number
