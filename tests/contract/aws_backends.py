"""AWS implementations of the state store and table index ports for the contract suites, on a moto server.

How to use from a contract fixture (the ``"aws"`` parameter)::

    from tests.contract import aws_backends

    @pytest.fixture(params=["memory", "sqlite", "aws"])
    def backend(request: pytest.FixtureRequest, tmp_path: Path) -> StateStoreBackend:
        if request.param == "aws":
            return aws_backends.make_state_store_backend(tmp_path)
        ...

``make_state_store_backend`` and ``make_table_index`` are plain functions: nothing to enter, nothing to clean up.
Each call creates fresh, uniquely named DynamoDB tables (and a data bucket) on one moto server per test process,
started on 127.0.0.1 on a free port at the first call and stopped when the process exits. Calls never see each
other's data. Mark the "aws" parameter with ``pytest.mark.aws`` if it should be deselectable.

Why a server and not ``moto.mock_aws()``: ``mock_aws`` resets moto's process-wide state when it starts and stops,
so it cannot be left running across a fixture boundary, and it would also wipe a server running in the same process.
A server also serves pyarrow's S3 client, which ``mock_aws`` cannot intercept: pass ``moto_endpoint()`` to
``pyarrow.fs.S3FileSystem(endpoint_override=..., scheme="http")`` explicitly (pyarrow ignores AWS_ENDPOINT_URL).
Tests in this process that use ``mock_aws`` must not overlap with a test using these resources.

moto serves about 100 conditional writes per second over HTTP: keep contract tests small. The server runs with the
emulator's guards (``sleeper.emulator.moto_guards``), which make moto's conditional writes atomic as AWS's are;
``atomic_conditional_puts`` is re-exported for callers that run moto otherwise.
"""

from __future__ import annotations

import atexit
import logging
import socket
import threading
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from moto.server import ThreadedMotoServer

from sleeper.adapters.aws.clients import AwsSettings, dynamodb_client, s3_client
from sleeper.adapters.aws.dynamodb_state_store import DynamoDBStateStoreBackend
from sleeper.adapters.aws.dynamodb_table_index import DynamoDBTableIndex
from sleeper.adapters.aws.resources import (
    create_bucket,
    create_state_store_tables,
    create_table_index_tables,
)
from sleeper.adapters.aws.s3_log import S3StateStoreBackend
from sleeper.core.naming import StateStoreTableNames, TableIndexTableNames
from sleeper.emulator.moto_guards import atomic_conditional_puts, guard_moto
from sleeper.emulator.moto_speedups import speed_up_moto

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_s3 import S3Client

__all__ = [
    "REGION",
    "AwsStateStore",
    "AwsTableIndex",
    "atomic_conditional_puts",
    "aws_settings",
    "create_state_store",
    "create_table_index",
    "make_s3_state_store_backend",
    "make_state_store_backend",
    "make_table_index",
    "moto_endpoint",
    "new_instance_id",
]

REGION = "eu-west-2"

S3_LIST_PAGE = 50
"""The listing page size of the S3 state store backends the tests make (S3's own is 1,000 keys)."""

_lock = threading.Lock()
_server: ThreadedMotoServer | None = None
_endpoint: str | None = None


def _listening(endpoint: str) -> bool:
    host, port = endpoint.removeprefix("http://").rsplit(":", 1)
    try:
        with socket.create_connection((host, int(port)), timeout=5):
            return True
    except OSError:
        return False


def moto_endpoint() -> str:
    """The URL of this process's moto server (``http://127.0.0.1:<port>``), started at the first call, and started
    again (on a new port, with a warning) if it no longer accepts connections, so one lost server fails the tests that
    held its address rather than every later test of the worker."""
    global _server, _endpoint
    with _lock:
        if _endpoint is not None and not _listening(_endpoint):
            logging.getLogger(__name__).warning("moto server at %s stopped answering: restarting", _endpoint)
            _endpoint = None
        if _endpoint is None:
            # werkzeug logs every request at INFO to stderr unless told otherwise.
            logging.getLogger("werkzeug").setLevel(logging.WARNING)
            speed_up_moto()
            guard_moto()  # as the emulator does: moto's conditional writes are not atomic alone
            server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
            server.start()
            host, port = server.get_host_and_port()
            atexit.register(server.stop)
            _server = server
            _endpoint = f"http://{host}:{port}"
        return _endpoint


def aws_settings() -> AwsSettings:
    """Settings that reach this process's moto server, with the dummy credentials moto accepts."""
    return AwsSettings(REGION, moto_endpoint(), access_key_id="testing", secret_access_key="testing")


def new_instance_id() -> str:
    """A Sleeper instance id no other call has returned, so every test gets resources of its own."""
    return f"test-{uuid.uuid4().hex[:12]}"


@dataclass(frozen=True, slots=True, kw_only=True)
class AwsStateStore:
    """A fresh AWS state store on the moto server: its backend and what it is made of.

    Attributes:
        backend: The backend under test.
        dynamodb: A DynamoDB client on the server.
        s3: An S3 client on the server.
        table_names: The DynamoDB tables of the backend.
        data_bucket: The bucket holding large transaction bodies.
    """

    backend: DynamoDBStateStoreBackend
    dynamodb: DynamoDBClient
    s3: S3Client
    table_names: StateStoreTableNames
    data_bucket: str


@dataclass(frozen=True, slots=True, kw_only=True)
class AwsTableIndex:
    """A fresh AWS table index on the moto server, and what it is made of.

    Attributes:
        index: The index under test.
        dynamodb: A DynamoDB client on the server.
        table_names: The DynamoDB tables of the index.
    """

    index: DynamoDBTableIndex
    dynamodb: DynamoDBClient
    table_names: TableIndexTableNames


def create_state_store(*, page_size: int | None = None) -> AwsStateStore:
    """Creates the DynamoDB tables and data bucket of a new instance, and its state store backend."""
    settings = aws_settings()
    dynamodb = dynamodb_client(settings)
    s3 = s3_client(settings)
    instance_id = new_instance_id()
    names = StateStoreTableNames.for_instance(instance_id)
    create_state_store_tables(dynamodb, names)
    bucket = f"sleeper-{instance_id}-table-data"
    create_bucket(s3, bucket, REGION)
    backend = DynamoDBStateStoreBackend(dynamodb, s3, table_names=names, data_bucket=bucket)
    return AwsStateStore(backend=backend, dynamodb=dynamodb, s3=s3, table_names=names, data_bucket=bucket)


def create_table_index() -> AwsTableIndex:
    """Creates the table index tables of a new instance, and its index."""
    dynamodb = dynamodb_client(aws_settings())
    names = TableIndexTableNames.for_instance(new_instance_id())
    create_table_index_tables(dynamodb, names)
    return AwsTableIndex(index=DynamoDBTableIndex(dynamodb, names), dynamodb=dynamodb, table_names=names)


def make_state_store_backend(tmp_path: Path) -> DynamoDBStateStoreBackend:
    """A state store backend on fresh DynamoDB tables and a fresh bucket (``tmp_path`` is not used)."""
    return create_state_store().backend


def make_s3_state_store_backend(tmp_path: Path) -> S3StateStoreBackend:
    """A state store backend whose logs are objects in a fresh bucket (no DynamoDB; ``tmp_path`` is not used). It
    lists keys in pages of :data:`S3_LIST_PAGE`, so that reading a log of a few hundred entries crosses pages."""
    s3 = s3_client(aws_settings())
    bucket = f"sleeper-{new_instance_id()}-table-data"
    create_bucket(s3, bucket, REGION)
    return S3StateStoreBackend(s3, bucket, list_page_size=S3_LIST_PAGE)


def make_table_index(tmp_path: Path) -> DynamoDBTableIndex:
    """A table index on fresh DynamoDB tables (``tmp_path`` is not used)."""
    return create_table_index().index
