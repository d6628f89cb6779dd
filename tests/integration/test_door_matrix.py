"""The door matrix (docs/usage/doors.md): every door that hands out a table's rows either applies the table's rules
exactly as a query does, or refuses with a typed error.

The rules: a security filter with the table's authorisations (``SecurityFilteringIterator`` as the table's iterator,
config ``visibility,A``), an age-off filter (``sleeper.table.filters``), aggregations (``sleeper.table.aggregations``)
and a user iterator (``FixedAgeOffIterator`` as the table's iterator). Each rule's table holds the same 1,000 stored
rows (two files per leaf, so a key's two rows are merged from two files), written before the rule was set, so the files
hold rows the rule drops or combines; each rule keeps 500 of them. A second set of cells gives the caller's own
authorisations to the doors that take them (a query-time ``SecurityFilteringIterator``, as Sleeper's fine-grained
security does) on top of the table's security filter.

Each cell compares the door's rows with ``Table.scan``'s (``Table.query`` with the query-time iterator for the
caller's authorisations), and ``Table.scan`` itself with a pyarrow model of the rule. The doors that run locally run on
a local instance; the doors that exist only on AWS (the Athena connectors', the WebSocket API's and the REST API's
Lambda handlers) also run on an instance on moto.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

import sleeper
from sleeper.api.table import Table
from sleeper.athena.exceptions import AthenaConnectorError
from sleeper.athena.handlers import AthenaSettings, CompositeHandler, iterator_applying_connector, simple_connector
from sleeper.bulk_export.exceptions import BulkExportError
from sleeper.bulk_export.local import export_table
from sleeper.bulk_export.model import BulkExportQuery
from sleeper.core.exceptions import SleeperError
from sleeper.core.schema import Field, PrimitiveType, Schema
from sleeper.core.websocket import WebSocketTarget
from sleeper.emulator.provision import provision_instance
from sleeper.io.filesystem import s3_filesystem
from sleeper.query.entry import handle_leaf_query
from sleeper.query.queued import LEAF_PARTITION_QUERY_QUEUE
from sleeper.query.results_reader import queued_query, raise_if_failed, run_queued_query, tracked_rows
from sleeper.query.websocket import handle_websocket_event
from sleeper.rest_api.handler import TABLES_PATH, handle_rest_request
from sleeper.runtime.local.instance import LocalInstance
from tests.unit.athena import federation_requests as fr

pytestmark = pytest.mark.integration

SCHEMA = Schema.of(
    row_keys=[Field("key", PrimitiveType.LONG)],
    values=[
        Field("timestamp", PrimitiveType.LONG),
        Field("count", PrimitiveType.LONG),
        Field("visibility", PrimitiveType.STRING),
    ],
)
COLUMNS = ("key", "timestamp", "count", "visibility")
ROWS = 1_000
SPLIT_POINT = 125
DAY_MS = 86_400_000
NOW_MS = int(time.time() * 1000)
SECURITY = "sleeper.iterators.examples.SecurityFilteringIterator"
TABLE_AUTHS = "A"

RULES: dict[str, dict[str, str]] = {
    "security": {
        "sleeper.table.iterator.class.name": SECURITY,
        "sleeper.table.iterator.config": f"visibility,{TABLE_AUTHS}",
    },
    "age-off": {"sleeper.table.filters": f"ageOff(timestamp,{DAY_MS})"},
    "aggregation": {"sleeper.table.aggregations": "sum(count),max(timestamp),min(visibility)"},
    "user-iterator": {
        "sleeper.table.iterator.class.name": "sleeper.iterators.examples.FixedAgeOffIterator",
        "sleeper.table.iterator.config": f"count,{ROWS // 2}",
    },
}
CALLERS = {"A": 500, "B": 250, "none": 250}
"""A caller's authorisations (``none``: no authorisations), and how many rows they see of the security table."""
LABELS = ("A", "B", "B", "")
"""The visibility of key ``k`` is ``LABELS[k % 4]``: the table's authorisation ``A`` sees ``A`` and the unlabelled."""


def _stored_rows() -> pa.Table:
    """1,000 rows, two of each of 500 keys: half the keys older than the age-off, half labelled beyond ``A``."""
    index = list(range(ROWS))
    keys = [i // 2 for i in index]
    return pa.table(
        {
            "key": pa.array(keys, pa.int64()),
            "timestamp": pa.array([NOW_MS - (10 * DAY_MS if k < 250 else 3_600_000) for k in keys], pa.int64()),
            "count": pa.array(index, pa.int64()),
            "visibility": pa.array([LABELS[k % 4] for k in keys], pa.string()),
        }
    )


def _batch(rows: pa.Table, parity: int) -> pa.Table:
    """The stored rows of even (0) or odd (1) index: each key once, so the two ingests give each leaf two files."""
    return rows.filter(pc.equal(pc.bit_wise_and(rows.column("count"), 1), parity))


def _visible(rows: pa.Table, auths: str) -> pa.Table:
    labels = rows.column("visibility")
    allowed = pa.array(["", *(a for a in auths.split(",") if a)], pa.string())
    return rows.filter(pc.or_kleene(pc.is_null(labels), pc.is_in(labels, value_set=allowed)))


def _model(rule: str, rows: pa.Table) -> pa.Table:
    """What a rule leaves of stored rows, computed with pyarrow alone."""
    if rule == "security":
        return _visible(rows, TABLE_AUTHS)
    if rule == "age-off":
        return rows.filter(pc.greater_equal(rows.column("timestamp"), int(time.time() * 1000) - DAY_MS))
    if rule == "aggregation":
        grouped = rows.group_by("key").aggregate([("timestamp", "max"), ("count", "sum"), ("visibility", "min")])
        return grouped.rename_columns(["key", "timestamp", "count", "visibility"])
    assert rule == "user-iterator"
    return rows.filter(pc.greater_equal(rows.column("count"), ROWS // 2))


def _canonical(rows: pa.Table | list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    """Rows as sorted tuples of the table's columns, however a door returned them."""
    records = rows.select(list(COLUMNS)).to_pylist() if isinstance(rows, pa.Table) else rows
    return sorted(tuple(r[c] for c in COLUMNS) for r in records)


@dataclass(frozen=True, slots=True)
class Refused:
    """A door's refusal: the typed error it raised (or sent), and its message."""

    error: str
    message: str


Outcome = pa.Table | list[dict[str, Any]] | Refused


class Policy(Enum):
    """What the rule asks of a door (docs/usage/doors.md)."""

    APPLIES = "applies the rules: its rows equal Table.scan's"
    APPLIES_OR_REFUSES = "applies the rules or refuses with a typed error"
    NO_ROWS = "hands out no rows"


DOORS: dict[str, Policy] = {
    "scan": Policy.APPLIES,
    "queue-s3": Policy.APPLIES,
    "queue-sqs": Policy.APPLIES,
    "websocket": Policy.APPLIES,
    "bulk-export": Policy.APPLIES,
    "athena-simple": Policy.APPLIES_OR_REFUSES,
    "athena-iterator": Policy.APPLIES,
    "iceberg": Policy.APPLIES_OR_REFUSES,
    "time-travel": Policy.APPLIES,
    "sql": Policy.APPLIES,
    "rest": Policy.NO_ROWS,
}
CALLER_DOORS = ("scan", "queue-s3", "queue-sqs", "websocket")
"""The doors that take a caller's authorisations (the others serve the table's rules alone)."""


def _assert_cell(door: str, outcome: Outcome, expected: pa.Table, rule: str | None = None) -> None:
    """A door's outcome against Table.scan's rows, by the door's policy; a refusal of a table for its rule must name
    the property that sets the rule."""
    policy = DOORS[door]
    if isinstance(outcome, Refused):
        assert policy is not Policy.APPLIES, f"{door} must apply the table's rules, but refused: {outcome}"
        assert outcome.error and outcome.message.strip(), f"{door} refused with no reason: {outcome}"
        if policy is Policy.APPLIES_OR_REFUSES and rule is not None:
            named = [p for p in RULES[rule] if p in outcome.message]
            assert named, f"{door} refused without naming the property that sets the rule: {outcome}"
        return
    assert policy is not Policy.NO_ROWS, f"{door} hands out no rows, but returned {len(outcome)}"
    got = _canonical(outcome)
    want = _canonical(expected)
    assert len(got) == len(want), f"{door}: {len(got)} rows where Table.scan gives {len(want)}"
    assert got == want, f"{door}: the rows differ from Table.scan's"


# --- the doors, driven as their callers drive them ---------------------------------------------------------------


class RecordingPoster:
    """API Gateway's management API as a list of the messages posted to connections."""

    def __init__(self) -> None:
        self.posted: list[tuple[WebSocketTarget, str]] = []

    def post(self, target: WebSocketTarget, data: str, *, attempts: int, base_delay: float, max_delay: float) -> None:
        self.posted.append((target, data))

    def messages(self) -> list[dict[str, Any]]:
        return [json.loads(data) for _, data in self.posted]


class SocketInstance:
    """An instance whose query functions post to WebSocket connections through a :class:`RecordingPoster`."""

    def __init__(self, instance: Any, poster: RecordingPoster) -> None:
        self._instance = instance
        self.websocket_poster = poster

    def __getattr__(self, name: str) -> Any:
        return getattr(self._instance, name)


def _security_iterator(caller: str | None) -> dict[str, Any]:
    """A query's query-time iterator carrying a caller's authorisations (none for ``None``: the table's rules only)."""
    if caller is None:
        return {}
    auths = "" if caller == "none" else caller
    return {"queryTimeIteratorClassName": SECURITY, "queryTimeIteratorConfig": f"visibility,{auths}"}


def _websocket_event(body: Mapping[str, Any], connection_id: str) -> dict[str, Any]:
    return {
        "requestContext": {
            "eventType": "MESSAGE",
            "routeKey": "$default",
            "connectionId": connection_id,
            "domainName": "abc123.execute-api.eu-west-2.amazonaws.com",
            "stage": "live",
        },
        "body": json.dumps(body),
        "isBase64Encoded": False,
    }


def _websocket_outcome(messages: list[dict[str, Any]]) -> Outcome:
    errors = [m for m in messages if m.get("message") == "error"]
    if errors:
        return Refused("websocket error message", "; ".join(str(m.get("error")) for m in errors))
    assert any(m.get("message") == "completed" for m in messages), messages
    return [row for m in messages if m.get("message") == "rows" for row in m["rows"]]


def _read_websocket(
    send: Callable[[dict[str, Any]], object],
    run_leaves: Callable[[], None],
    poster: RecordingPoster,
    name: str,
    caller: str | None,
) -> Outcome:
    connection = f"conn-{uuid.uuid4().hex[:8]}"
    whole = {"key": {"min": -(2**63), "minInclusive": True, "maxInclusive": False}}
    query = {"queryId": str(uuid.uuid4()), "tableName": name, "type": "Query", "regions": [whole]}
    send(_websocket_event({**query, **_security_iterator(caller)}, connection))
    run_leaves()
    return _websocket_outcome([json.loads(d) for t, d in poster.posted if t.connection_id == connection])


def _read_athena(
    handle: Callable[[dict[str, Any]], dict[str, Any]], schema_name: str, name: str, tags: Mapping[str, str]
) -> Outcome:
    """Every row a connector returns for the whole table, driven as Athena drives it, for a caller with these tags."""

    def ask(request: dict[str, Any]) -> dict[str, Any]:
        request["identity"] = {**fr.identity(), "principalTags": dict(tags)}
        return handle(request)

    try:
        full = fr.decode_schema(ask(fr.get_table(schema_name.lower(), name.lower()))["schema"])
        layout = ask(fr.get_table_layout(schema_name, name, full))
        page = ask(fr.get_splits(schema_name, name, layout["partitions"]))
        assert page["continuationToken"] is None
        batches = []
        for split in page["splits"]:
            response = ask(fr.read_records(schema_name, name, full, split))
            assert response["@type"] == "ReadRecordsResponse", response["@type"]
            batches.append(fr.decode_block(response["records"]))
    except AthenaConnectorError as e:
        return Refused(type(e).__name__, str(e))
    return pa.Table.from_batches(batches, schema=full)


def _rest_event(method: str, path: str) -> dict[str, Any]:
    return {
        "version": "2.0",
        "rawPath": path,
        "requestContext": {"http": {"method": method, "path": path}, "authorizer": {"iam": {"accessKey": "AKIA"}}},
        "headers": {},
    }


TABLE_STATUS_KEYS = {
    "tableName",
    "tableId",
    "online",
    "partitions",
    "leafPartitions",
    "fileReferences",
    "files",
    "rows",
    "rowsApproximate",
}


def _read_rest(handle: Callable[[dict[str, Any]], dict[str, Any]], name: str) -> Outcome:
    """The REST API's answers about a table: its status holds metadata only, and no route returns rows."""
    status = handle(_rest_event("GET", f"{TABLES_PATH}/{name}"))
    assert status["statusCode"] == 200, status
    body = json.loads(status["body"])
    assert set(body) <= TABLE_STATUS_KEYS, f"the REST API's table status has more than metadata: {sorted(body)}"
    for path in (f"{TABLES_PATH}/{name}/rows", f"{TABLES_PATH}/{name}/query", f"{TABLES_PATH}/{name}/export"):
        for method in ("GET", "POST"):
            answer = handle(_rest_event(method, path))
            assert answer["statusCode"] == 404, (method, path, answer)
    return Refused("not_found", "the REST API has no route that returns a table's rows")


# --- the local instance ------------------------------------------------------------------------------------------


@dataclass
class LocalDoors:
    """A local instance with one table per rule (and one Iceberg view per rule), and the doors to read them."""

    instance: LocalInstance
    tables: dict[str, Table[LocalInstance]]
    iceberg: dict[str, IcebergCase]
    export_root: Path
    poster: RecordingPoster

    def table(self, rule: str) -> Table[LocalInstance]:
        return self.tables[rule]

    def expected(self, rule: str, caller: str | None) -> pa.Table:
        table = self.table(rule)
        if caller is None:
            return table.scan().to_arrow()
        auths = "" if caller == "none" else caller
        return table.query(iterator=SECURITY, iterator_config=f"visibility,{auths}")

    def read(self, door: str, rule: str, caller: str | None = None) -> Outcome:
        table = self.table(rule)
        if door == "scan":
            return self.expected(rule, caller)
        if door in ("queue-s3", "queue-sqs"):
            iterator = _security_iterator(caller)
            query = queued_query(
                table.name,
                SCHEMA,
                [],
                None,
                results=door.removeprefix("queue-"),
                iterator=iterator.get("queryTimeIteratorClassName"),
                iterator_config=iterator.get("queryTimeIteratorConfig"),
            )
            rows = run_queued_query(
                self.instance, query, SCHEMA, results_filesystem=lambda: s3_filesystem(None), wait_seconds=30
            )
            try:
                raise_if_failed(tracked_rows(self.instance.query_tracker, query.query_id), query.query_id)
            except SleeperError as e:
                return Refused(type(e).__name__, str(e))
            assert rows is not None
            return rows
        if door == "websocket":
            socket = SocketInstance(self.instance, self.poster)

            def run_leaves() -> None:
                queue = self.instance.queue(LEAF_PARTITION_QUERY_QUEUE)
                while messages := queue.receive(10):
                    for message in messages:
                        handle_leaf_query(socket, message.body)  # type: ignore[arg-type]
                        queue.delete(message.receipt_handle)

            return _read_websocket(
                lambda event: handle_websocket_event(socket, event),  # type: ignore[arg-type]
                run_leaves,
                self.poster,
                table.name,
                caller,
            )
        if door == "bulk-export":
            query = BulkExportQuery(export_id=str(uuid.uuid4()), table_name=table.name)
            try:
                summary = export_table(self.instance, query, str(self.export_root))
            except BulkExportError as e:
                return Refused(type(e).__name__, str(e))
            return pa.concat_tables([pq.read_table(path) for path in summary.files])
        if door in ("athena-simple", "athena-iterator"):
            assert caller is None, "a request to Athena's connectors carries no authorisations they may trust"
            return _read_athena(self.athena(door).handle, self.schema_name, table.name, {})
        if door == "iceberg":
            return self._read_iceberg(rule)
        if door == "time-travel":
            return table.scan(as_of=_files_transactions(table)[-1]).to_arrow()
        if door == "sql":
            return sleeper.connect(self.instance.directory).sql(f'select * from "{table.name}"').read_all()
        if door == "rest":
            return _read_rest(lambda event: handle_rest_request(self.instance, event), table.name)
        raise AssertionError(f"no door {door!r}")

    @property
    def schema_name(self) -> str:
        return str(self.instance.properties.get("sleeper.id"))

    def athena(self, door: str, query_time_config: str | None = None) -> CompositeHandler:
        """A connector as deployed; the iterator-applying one with a fixed query-time security filter if given."""
        if door == "athena-simple":
            return simple_connector(self.instance, AthenaSettings(instance_id=self.schema_name, spill_bucket="spill"))
        settings = AthenaSettings(
            instance_id=self.schema_name,
            spill_bucket="spill",
            query_time_iterator_class_name=None if query_time_config is None else SECURITY,
            query_time_iterator_config=query_time_config,
        )
        return iterator_applying_connector(self.instance, settings)

    def _read_iceberg(self, rule: str) -> Outcome:
        """The view's rows as a catalog reader and as a reader of its last published ``metadata.json`` (DuckDB's
        ``iceberg_scan``) get them, after the rule was set; a refusal if neither can read the view."""
        from pyiceberg.exceptions import NoSuchTableError
        from pyiceberg.table import StaticTable

        from sleeper.iceberg import IcebergPublishError
        from sleeper.iceberg.catalog import load_catalog
        from sleeper.iceberg.publisher import publish_table

        case = self.iceberg[rule]
        if case.set_refused is not None:
            return case.set_refused
        try:
            publish_table(self.instance, case.table)
        except IcebergPublishError as e:  # a table with rules gets no view: the earlier one must be gone too
            refused = Refused(type(e).__name__, str(e))
        else:
            refused = Refused("no view", "the publish made no view")
        view = case.table.properties.get("sleeper.table.iceberg.name")
        assert view is not None
        try:
            return load_catalog(self.instance.data_root, None).load_table(view).scan().to_arrow()
        except NoSuchTableError as e:
            refused = Refused(type(e).__name__, f"{refused.message}; {e}")
        if Path(urlparse(case.metadata_location).path).exists():
            return StaticTable.from_metadata(case.metadata_location).scan().to_arrow()
        return refused


@dataclass(frozen=True, slots=True)
class IcebergCase:
    """A table published as a view before its rule was set: the table, and where its view's metadata was."""

    table: Table[LocalInstance]
    metadata_location: str
    set_refused: Refused | None


def _files_transactions(table: Table[Any]) -> list[int]:
    """The numbers of the table's kept files transactions, oldest first."""
    history = table.history().to_pylist()
    return [r["transaction_number"] for r in history if r["log"] == "files"]


def _table_with_rule(instance: Any, name: str, rule: str, properties: Mapping[str, str] | None = None) -> Table[Any]:
    """A table holding the 1,000 stored rows in two files per leaf, then given the rule."""
    table = instance.create_table(name, SCHEMA, split_points=[SPLIT_POINT], properties=dict(properties or {}))
    stored = _stored_rows()
    for parity in (0, 1):
        table.ingest(_batch(stored, parity), **({} if isinstance(instance, LocalInstance) else {"direct": True}))
    assert sum(r.number_of_rows for r in table.file_references()) == ROWS
    return table


@pytest.fixture(scope="module")
def local(tmp_path_factory: pytest.TempPathFactory) -> LocalDoors:
    """The rule tables, built once: each holds the 1,000 stored rows, then is given its rule."""
    from sleeper.iceberg.publisher import publish_table

    root = tmp_path_factory.mktemp("doors")
    instance = LocalInstance.create(root / "instance")
    tables = {rule: _table_with_rule(instance, rule, rule).set_properties(values) for rule, values in RULES.items()}
    iceberg: dict[str, IcebergCase] = {}
    for rule, values in RULES.items():
        view = f"doors.{rule.replace('-', '_')}"
        plain = _table_with_rule(
            instance,
            f"iceberg-{rule}",
            rule,
            {"sleeper.table.iceberg.name": view, "sleeper.table.gc.commit.async": "false"},
        )
        published = publish_table(instance, plain).metadata_location
        try:
            iceberg[rule] = IcebergCase(plain.set_properties(values), published, None)
        except SleeperError as e:  # refusing to set a rule the view would bypass is a refusal of the door
            iceberg[rule] = IcebergCase(plain, published, Refused(type(e).__name__, str(e)))
    return LocalDoors(instance, tables, iceberg, root / "export", RecordingPoster())


@pytest.mark.parametrize("rule", list(RULES))
def should_scan_the_rows_the_rule_leaves(local: LocalDoors, rule: str) -> None:
    # Given a table whose files hold 1,000 rows written before its rule was set
    # When it is scanned directly, then it gives the rows the rule leaves of them: 500
    scanned = local.table(rule).scan().to_arrow()
    assert _canonical(scanned) == _canonical(_model(rule, _stored_rows()))
    assert scanned.num_rows == ROWS // 2


@pytest.mark.parametrize("door", list(DOORS))
@pytest.mark.parametrize("rule", list(RULES))
def should_apply_the_tables_rules_or_refuse_at_every_door(local: LocalDoors, rule: str, door: str) -> None:
    # Given a table with the rule, whose files hold rows the rule drops or combines
    expected = local.expected(rule, None)
    # When its rows are read through the door
    outcome = local.read(door, rule)
    # Then they are Table.scan's rows, or the door refused with a typed error (as its policy allows)
    _assert_cell(door, outcome, expected, rule)


@pytest.mark.parametrize("door", CALLER_DOORS)
@pytest.mark.parametrize("caller", list(CALLERS))
def should_apply_the_callers_authorisations_after_the_tables_rules(local: LocalDoors, caller: str, door: str) -> None:
    # Given the table's security filter (authorisation A) and a caller with their own authorisations
    expected = local.expected("security", caller)
    assert expected.num_rows == CALLERS[caller]
    # When the caller reads the table through a door that takes their authorisations
    outcome = local.read(door, "security", caller)
    # Then they see exactly what Table.query with the same authorisations gives
    _assert_cell(door, outcome, expected)


@pytest.mark.parametrize("rule", list(RULES))
def should_apply_todays_rules_to_a_past_state(local: LocalDoors, rule: str) -> None:
    # Given a table whose rule was set after both ingests
    table = local.table(rule)
    # When it is read as of its first ingest
    past = table.scan(as_of=_files_transactions(table)[0]).to_arrow()
    # Then the rule applies to the rows of that state
    assert _canonical(past) == _canonical(_model(rule, _batch(_stored_rows(), 0)))


FORGED_TAGS = {
    "no tags": {},
    "tagged A": {"sleeper-auths": "A"},
    "tagged A and B": {"sleeper-auths": "A:B", "auths": "A,B"},
}


@pytest.mark.parametrize("tags", list(FORGED_TAGS))
def should_give_every_athena_caller_the_connectors_authorisations_whatever_the_request_says(
    local: LocalDoors, tags: str
) -> None:
    # Given the iterator-applying connector set up with a security filter for authorisation B
    connector = local.athena("athena-iterator", "visibility,B")
    expected = local.expected("security", "B")
    assert expected.num_rows == CALLERS["B"]
    # When a caller reads the security table with principal tags of their own writing in the request
    outcome = _read_athena(connector.handle, local.schema_name, "security", FORGED_TAGS[tags])
    # Then they see what a query with authorisation B sees, and nothing their tags claim
    _assert_cell("athena-iterator", outcome, expected)


# --- the doors that exist only on AWS, through their Lambda handlers, on an instance on moto ----------------------

AWS_DOORS = ("athena-simple", "athena-iterator", "websocket", "rest")


@dataclass
class AwsDoors:
    """An instance on moto with one table per rule, its Lambda handlers using it (WebSocket posts recorded)."""

    instance: Any
    tables: dict[str, Table[Any]]
    poster: RecordingPoster

    def read(self, door: str, rule: str) -> Outcome:
        from sleeper.core.operations import LEAF_PARTITION_QUERY_Q
        from sleeper.lambdas import athena, rest_api, sqs, websocket_query
        from tests.integration.aws_runtime.conftest import drain_event

        name = self.tables[rule].name
        if door in ("athena-simple", "athena-iterator"):
            handle = athena.simple if door == "athena-simple" else athena.iterator_applying
            return _read_athena(handle, self.instance.instance_id, name, {})
        if door == "websocket":

            def run_leaves() -> None:
                while (event := drain_event(self.instance, LEAF_PARTITION_QUERY_Q))["Records"]:
                    assert sqs.leaf_partition_query(event) == {"batchItemFailures": []}

            return _read_websocket(websocket_query.handler, run_leaves, self.poster, name, None)
        assert door == "rest"
        return _read_rest(rest_api.handler, name)


@pytest.fixture(scope="module")
def aws() -> Iterator[AwsDoors]:
    """An instance on moto as a deployment leaves it, its rule tables built once, the handlers pointed at it."""
    from sleeper.adapters.aws.clients import s3_client
    from sleeper.lambdas import athena
    from sleeper.lambdas._common import use_instance
    from sleeper.runtime.aws.instance import AwsInstance
    from tests.contract.aws_backends import REGION, aws_settings, moto_endpoint, new_instance_id
    from tests.integration.aws_runtime.conftest import QUEUES

    config = provision_instance(aws_settings(), new_instance_id(), queues=QUEUES)
    spill_bucket = f"spill-{uuid.uuid4().hex[:10]}"
    s3_client(aws_settings()).create_bucket(
        Bucket=spill_bucket, CreateBucketConfiguration={"LocationConstraint": REGION}
    )
    with pytest.MonkeyPatch.context() as env:
        env.setenv("CONFIG_BUCKET", config.config_bucket)
        env.setenv("AWS_REGION", REGION)
        env.setenv("AWS_ENDPOINT_URL", moto_endpoint())
        env.setenv("AWS_ACCESS_KEY_ID", "testing")
        env.setenv("AWS_SECRET_ACCESS_KEY", "testing")
        env.setenv(athena.SPILL_BUCKET_ENV, spill_bucket)
        use_instance(None)
        instance = AwsInstance.from_environment()
        tables = {
            rule: _table_with_rule(instance, f"doors-{rule}", rule).set_properties(values)
            for rule, values in RULES.items()
        }
        poster = RecordingPoster()
        use_instance(SocketInstance(instance, poster))  # type: ignore[arg-type]
        athena.reset()
        try:
            yield AwsDoors(instance, tables, poster)
        finally:
            athena.reset()
            use_instance(None)


@pytest.mark.aws
@pytest.mark.parametrize("door", AWS_DOORS)
@pytest.mark.parametrize("rule", list(RULES))
def should_apply_the_tables_rules_or_refuse_at_every_aws_door(aws: AwsDoors, rule: str, door: str) -> None:
    # Given a table on AWS with the rule, whose files hold rows the rule drops or combines
    expected = aws.tables[rule].scan().to_arrow()
    assert _canonical(expected) == _canonical(_model(rule, _stored_rows()))
    # When its rows are read through the door's Lambda handler
    outcome = aws.read(door, rule)
    # Then they are Table.scan's rows, or the door refused with a typed error (as its policy allows)
    _assert_cell(door, outcome, expected, rule)


# --- a pending row delete: every door returns the rows minus the deleted ones, or refuses --------------------------

DELETE_FILTER = "key < 100 or visibility = 'B'"
"""The rows deleted: a key range and a value (the visibility ``B`` is ``LABELS[k % 4]`` for ``k % 4`` in 1, 2)."""
DELETE_DOORS: dict[str, Policy] = DOORS
"""What a pending delete asks of each door: what the table's rules ask (the queued doors, the WebSocket API, bulk
export and the iterator-applying Athena connector apply it; the simple connector and the Iceberg view refuse)."""
DELETE_GAPS: dict[str, str] = {}
"""Doors that neither apply a pending delete nor refuse the table yet, each with why (none: every door applies them
or refuses the table)."""


def _deleted(rows: pa.Table) -> pa.Table:
    """The rows a delete of :data:`DELETE_FILTER` leaves, computed with pyarrow alone."""
    match = pc.or_kleene(pc.less(rows.column("key"), 100), pc.equal(rows.column("visibility"), "B"))
    return rows.filter(pc.invert(pc.fill_null(match, False)))


def _late_rows() -> pa.Table:
    """Rows ingested after the delete, every one of which its filter matches: none is deleted."""
    keys = list(range(600, 620))
    return pa.table(
        {
            "key": pa.array(keys, pa.int64()),
            "timestamp": pa.array([NOW_MS] * len(keys), pa.int64()),
            "count": pa.array(keys, pa.int64()),
            "visibility": pa.array(["B"] * len(keys), pa.string()),
        }
    )


def _deleting_table(instance: Any, name: str, properties: Mapping[str, str] | None = None) -> tuple[Table[Any], int]:
    """The 1,000 stored rows, a delete of :data:`DELETE_FILTER`, then rows it matches ingested after it."""
    table = _table_with_rule(instance, name, "pending-delete", properties)
    number = table.delete(DELETE_FILTER)
    table.ingest(_late_rows(), **({} if isinstance(instance, LocalInstance) else {"direct": True}))
    return table, number


def _deleting_reference() -> pa.Table:
    return pa.concat_tables([_deleted(_stored_rows()), _late_rows()])


@pytest.fixture(scope="module")
def deleting(local: LocalDoors) -> int:
    """Adds the ``pending-delete`` table (and its published view) to the local doors; returns the delete's number."""
    from sleeper.iceberg.publisher import publish_table

    table, number = _deleting_table(local.instance, "pending-delete")
    local.tables["pending-delete"] = table
    viewed = _table_with_rule(
        local.instance,
        "iceberg-pending-delete",
        "pending-delete",
        {"sleeper.table.iceberg.name": "doors.pending_delete", "sleeper.table.gc.commit.async": "false"},
    )
    published = publish_table(local.instance, viewed).metadata_location
    viewed.delete(DELETE_FILTER)
    local.iceberg["pending-delete"] = IcebergCase(viewed, published, None)
    return number


def _assert_delete_cell(door: str, outcome: Outcome, expected: pa.Table) -> None:
    policy = DELETE_DOORS[door]
    if isinstance(outcome, Refused) and policy is not Policy.NO_ROWS:
        assert policy is Policy.APPLIES_OR_REFUSES, f"{door} must apply the pending delete, but refused: {outcome}"
        assert "delete" in outcome.message or "no view" in outcome.error, f"{door} refused without a reason: {outcome}"
        return
    _assert_cell(door, outcome, expected)


def _door_params(doors: Iterator[str] | list[str] | tuple[str, ...]) -> list[Any]:
    return [
        pytest.param(d, marks=pytest.mark.xfail(strict=True, reason=DELETE_GAPS[d])) if d in DELETE_GAPS else d
        for d in doors
    ]


@pytest.mark.parametrize("door", _door_params(list(DOORS)))
def should_return_the_rows_minus_the_deleted_ones_or_refuse_at_every_door(
    local: LocalDoors, deleting: int, door: str
) -> None:
    # Given a table holding 1,000 rows, a delete of some of them, and later rows the delete's filter matches
    expected = local.table("pending-delete").scan().to_arrow()
    assert _canonical(expected) == _canonical(_deleting_reference())
    # When its rows are read through the door, then they are the rows minus the deleted ones, or a refusal
    _assert_delete_cell(door, local.read(door, "pending-delete"), expected)


def should_keep_the_rows_minus_the_deleted_ones_across_time_travel_compaction_and_a_split(
    local: LocalDoors, deleting: int, tmp_path: Path
) -> None:
    table, number = _deleting_table(local.instance, "delete-lifecycle")
    # Time travel before the delete sees the deleted rows, after it does not
    assert _canonical(table.scan(as_of=number - 1).to_arrow()) == _canonical(_stored_rows())
    assert _canonical(table.scan(as_of=number).to_arrow()) == _canonical(_deleted(_stored_rows()))
    # A compaction removes the rows, a split moves them, and every read keeps the reference
    front = sleeper.connect(local.instance.directory)
    front.compact_now(table.name, compact_all=True)
    table.set_properties({"sleeper.table.partition.splitting.threshold": "100"})
    front.split_now(table.name)
    table.ingest(_late_rows().slice(0, 5))
    front.compact_now(table.name, compact_all=True)
    reference = pa.concat_tables([_deleting_reference(), _late_rows().slice(0, 5)])
    assert len(table.leaf_partitions()) > 2
    assert _canonical(table.scan().to_arrow()) == _canonical(reference)
    assert _canonical(table.scan(as_of=number).to_arrow()) == _canonical(_deleted(_stored_rows()))
    # And once purged, no file a read plans holds a deleted row
    assert table.purge().done
    assert _canonical(table.scan().to_arrow()) == _canonical(reference)


@dataclass(frozen=True, slots=True)
class PurgedCase:
    """The ``purged`` table's references (file, partition) before and after its purge, and those of the file ingested
    after the delete (in no delete's set)."""

    before: frozenset[tuple[str, str]]
    after: frozenset[tuple[str, str]]
    later: frozenset[tuple[str, str]]


def _references(table: Table[Any]) -> frozenset[tuple[str, str]]:
    return frozenset((r.filename, r.partition_id) for r in table.file_references())


@pytest.fixture(scope="module")
def purging(local: LocalDoors) -> PurgedCase:
    """Adds the ``purged`` table to the local doors: the stored rows, published as a view, a delete of
    :data:`DELETE_FILTER` (which withdraws the view), rows it matches ingested after it, then ``Table.purge``."""
    from sleeper.iceberg.publisher import publish_table

    properties = {"sleeper.table.iceberg.name": "doors.purged", "sleeper.table.gc.commit.async": "false"}
    table = _table_with_rule(local.instance, "purged", "purged", properties)
    published = publish_table(local.instance, table).metadata_location
    table.delete(DELETE_FILTER)
    earlier = _references(table)
    table.ingest(_late_rows())
    before = _references(table)
    assert table.purge().done
    local.tables["purged"] = table
    local.iceberg["purged"] = IcebergCase(table, published, None)
    return PurgedCase(before, _references(table), before - earlier)


def should_purge_no_file_outside_a_deletes_set(purging: PurgedCase) -> None:
    # Given a table whose delete lists its two files per leaf, and a file ingested after the delete on the upper leaf
    assert len(purging.later) == 1
    # When it was purged, then the later file's references are the same, and the listed files' are replaced
    assert purging.later <= purging.after
    assert not (purging.before - purging.later) & purging.after


PURGED_DOORS: dict[str, Policy] = {door: Policy.NO_ROWS if door == "rest" else Policy.APPLIES for door in DOORS}
"""What a purged delete asks of each door: every door that hands out rows returns the rows minus the deleted ones
(the simple Athena connector and the Iceberg view, which refuse a pending delete, serve the table again)."""


@pytest.mark.parametrize("door", list(DOORS))
def should_return_the_rows_minus_the_deleted_ones_at_every_door_after_a_purge(
    local: LocalDoors, purging: PurgedCase, door: str
) -> None:
    # Given a table whose delete was purged, with rows the delete's filter matches ingested after it
    expected = local.table("purged").scan().to_arrow()
    assert _canonical(expected) == _canonical(_deleting_reference())
    # When its rows are read through the door, then they are the rows minus the deleted ones
    outcome = local.read(door, "purged")
    if isinstance(outcome, Refused):
        assert PURGED_DOORS[door] is Policy.NO_ROWS, f"{door} must serve a purged table, but refused: {outcome}"
        return
    _assert_cell(door, outcome, expected)


@pytest.mark.aws
@pytest.mark.parametrize("door", _door_params(AWS_DOORS))
def should_return_the_rows_minus_the_deleted_ones_or_refuse_at_every_aws_door(aws: AwsDoors, door: str) -> None:
    # Given a table on AWS with a pending delete
    if "pending-delete" not in aws.tables:
        aws.tables["pending-delete"] = _deleting_table(aws.instance, "doors-pending-delete")[0]
    expected = aws.tables["pending-delete"].scan().to_arrow()
    assert _canonical(expected) == _canonical(_deleting_reference())
    # When its rows are read through the door's Lambda handler, then they are those rows, or a refusal
    _assert_delete_cell(door, aws.read(door, "pending-delete"), expected)


# --- an upsert table: every door returns one row per row key, the last written, or refuses -------------------------

UPSERT_SCHEMAS = {
    "upsert-by-commit": SCHEMA,
    "upsert-by-sort-key": Schema.of(
        row_keys=[Field("key", PrimitiveType.LONG)],
        sort_keys=[Field("timestamp", PrimitiveType.LONG)],
        values=[Field("count", PrimitiveType.LONG), Field("visibility", PrimitiveType.STRING)],
    ),
}
"""The two kinds of upsert table (``sleeper.table.upsert``): without a sort key the last committed row of a key wins,
with one (here ``timestamp``) the row with the greatest sort key, whatever the order of the commits."""
UPSERT_GAPS: dict[tuple[str, str], str] = {}
"""Doors that neither apply an upsert table's rule nor refuse the table yet, each with why."""


def _versioned_rows() -> pa.Table:
    """The stored rows with distinct timestamps: of a key's two rows, the odd (later indexed) one has the greater."""
    rows = _stored_rows()
    return rows.set_column(1, "timestamp", pc.add(pa.scalar(NOW_MS, pa.int64()), rows.column("count")))


def _upserted_rows() -> pa.Table:
    """Rows upserted last, with the greatest timestamps: keys 0-19 (replacing stored ones) and 600-609 (new)."""
    keys = [*range(20), *range(600, 610)]
    return pa.table(
        {
            "key": pa.array(keys, pa.int64()),
            "timestamp": pa.array([NOW_MS + 10 * ROWS + k for k in keys], pa.int64()),
            "count": pa.array([5 * ROWS + k for k in keys], pa.int64()),
            "visibility": pa.array(["A"] * len(keys), pa.string()),
        }
    )


def _upsert_commits() -> list[pa.Table]:
    """What is written, in commit order: the odd rows first, then the even ones, then the upserted rows."""
    stored = _versioned_rows()
    return [_batch(stored, 1), _batch(stored, 0), _upserted_rows()]


def _upsert_reference(kind: str) -> pa.Table:
    """One row per key, the last written, computed with pyarrow alone: the last committed without a sort key, the
    greatest timestamp with one."""
    rows = pa.concat_tables(_upsert_commits())
    if kind == "upsert-by-sort-key":
        rows = rows.sort_by([("key", "ascending"), ("timestamp", "ascending")])
    indexed = rows.append_column("i", pa.array(range(rows.num_rows), pa.int64()))
    return rows.take(indexed.group_by("key").aggregate([("i", "max")]).column("i_max"))


def _upsert_table(instance: Any, name: str, kind: str, properties: Mapping[str, str] | None = None) -> Table[Any]:
    """An upsert table written by :func:`_upsert_commits`: ``Table.ingest`` twice (an upsert without a sort key),
    then ``Table.upsert``."""
    values = {"sleeper.table.upsert": "true", **(properties or {})}
    table = instance.create_table(name, UPSERT_SCHEMAS[kind], split_points=[SPLIT_POINT], properties=values)
    stored_odd, stored_even, upserted = _upsert_commits()
    direct = {} if isinstance(instance, LocalInstance) else {"direct": True}
    table.ingest(stored_odd, **direct)
    table.ingest(stored_even, **direct)
    table.upsert(upserted)
    return table


@pytest.fixture(scope="module")
def upserting(local: LocalDoors) -> None:
    """Adds the two upsert tables (and a published view of each, written before it became an upsert table)."""
    from sleeper.iceberg.publisher import publish_table

    for kind in UPSERT_SCHEMAS:
        local.tables[kind] = _upsert_table(local.instance, kind, kind)
        viewed = local.instance.create_table(
            f"iceberg-{kind}",
            UPSERT_SCHEMAS[kind],
            split_points=[SPLIT_POINT],
            properties={"sleeper.table.iceberg.name": f"doors.{kind.replace('-', '_')}"},
        )
        stored_odd, stored_even, upserted = _upsert_commits()
        viewed.ingest(stored_odd)
        published = publish_table(local.instance, viewed).metadata_location
        viewed = viewed.set_properties({"sleeper.table.upsert": "true", "sleeper.table.gc.commit.async": "false"})
        viewed.ingest(stored_even)
        viewed.upsert(upserted)
        local.iceberg[kind] = IcebergCase(viewed, published, None)


def _upsert_params() -> list[Any]:
    return [
        pytest.param(kind, door, marks=pytest.mark.xfail(strict=True, reason=UPSERT_GAPS[(kind, door)]))
        if (kind, door) in UPSERT_GAPS
        else pytest.param(kind, door)
        for kind in UPSERT_SCHEMAS
        for door in DOORS
    ]


@pytest.mark.parametrize(("kind", "door"), _upsert_params())
def should_return_one_row_per_key_the_last_written_or_refuse_at_every_door(
    local: LocalDoors, upserting: None, kind: str, door: str
) -> None:
    # Given an upsert table whose files hold several rows of a key, and rows upserted last
    expected = local.table(kind).scan().to_arrow()
    assert _canonical(expected) == _canonical(_upsert_reference(kind))
    # When its rows are read through the door, then they are one row per key, the last written, or a refusal
    outcome = local.read(door, kind)
    if isinstance(outcome, Refused) and DOORS[door] is Policy.APPLIES_OR_REFUSES:
        assert "upsert" in outcome.message or "delete" in outcome.message or "no view" in outcome.error, outcome
        return
    _assert_cell(door, outcome, expected)


@pytest.mark.parametrize("kind", list(UPSERT_SCHEMAS))
def should_keep_one_row_per_key_across_compaction_and_a_split(local: LocalDoors, kind: str) -> None:
    table = _upsert_table(local.instance, f"{kind}-lifecycle", kind)
    front = sleeper.connect(local.instance.directory)
    front.compact_now(table.name, compact_all=True)
    table.set_properties({"sleeper.table.partition.splitting.threshold": "100"})
    front.split_now(table.name)
    later = _upserted_rows().slice(5, 10)
    later = later.set_column(2, "count", pc.add(later.column("count"), pa.scalar(ROWS, pa.int64())))
    later = later.set_column(1, "timestamp", pc.add(later.column("timestamp"), pa.scalar(ROWS, pa.int64())))
    table.upsert(later)
    front.compact_now(table.name, compact_all=True)
    assert len(table.leaf_partitions()) > 2
    replaced = pc.is_in(_upsert_reference(kind).column("key"), value_set=later.column("key"))
    reference = pa.concat_tables([_upsert_reference(kind).filter(pc.invert(replaced)), later])
    assert _canonical(table.scan().to_arrow()) == _canonical(reference)
    assert _canonical(table.scan(via_queue=True).to_arrow()) == _canonical(reference)


@pytest.mark.aws
@pytest.mark.parametrize("door", AWS_DOORS)
@pytest.mark.parametrize("kind", list(UPSERT_SCHEMAS))
def should_return_one_row_per_key_the_last_written_or_refuse_at_every_aws_door(
    aws: AwsDoors, kind: str, door: str
) -> None:
    # Given an upsert table on AWS, written directly (Table.upsert writes in the calling process on either runtime)
    if kind not in aws.tables:
        aws.tables[kind] = _upsert_table(aws.instance, f"doors-{kind}", kind)
    expected = aws.tables[kind].scan().to_arrow()
    assert _canonical(expected) == _canonical(_upsert_reference(kind))
    # When its rows are read through the door's Lambda handler, then they are those rows, or a refusal
    outcome = aws.read(door, kind)
    if isinstance(outcome, Refused) and DOORS[door] is Policy.APPLIES_OR_REFUSES:
        assert "upsert" in outcome.message or "delete" in outcome.message, outcome
        return
    _assert_cell(door, outcome, expected)


# --- an overwritten table: every door returns exactly the new rows, or refuses; time travel before it the old ones --


def _overwrite_rows() -> pa.Table:
    """The rows an overwrite writes: 300 keys over both leaves, 100 of them stored before too, with new values."""
    keys = list(range(300, 600))
    return pa.table(
        {
            "key": pa.array(keys, pa.int64()),
            "timestamp": pa.array([NOW_MS] * len(keys), pa.int64()),
            "count": pa.array([10 * ROWS + k for k in keys], pa.int64()),
            "visibility": pa.array([LABELS[k % 4] for k in keys], pa.string()),
        }
    )


def _overwritten_table(instance: Any, name: str, properties: Mapping[str, str] | None = None) -> Table[Any]:
    """A table holding the 1,000 stored rows (one ingest), to be overwritten."""
    table = instance.create_table(name, SCHEMA, split_points=[SPLIT_POINT], properties=dict(properties or {}))
    table.ingest(_stored_rows(), **({} if isinstance(instance, LocalInstance) else {"direct": True}))
    return table


@pytest.fixture(scope="module")
def overwriting(local: LocalDoors) -> int:
    """Adds the ``overwritten`` table to the local doors: the stored rows, published as a view, then
    :func:`_overwrite_rows` written over them by ``Table.overwrite`` (which publishes the view again); returns the
    overwrite's transaction number."""
    from sleeper.iceberg.publisher import publish_table

    properties = {"sleeper.table.iceberg.name": "doors.overwritten", "sleeper.table.gc.commit.async": "false"}
    table = _overwritten_table(local.instance, "overwritten", properties)
    published = publish_table(local.instance, table).metadata_location
    number: int = table.overwrite(_overwrite_rows())
    local.tables["overwritten"] = table
    local.iceberg["overwritten"] = IcebergCase(table, published, None)
    return number


OVERWRITE_DOORS: dict[str, Policy] = {door: Policy.NO_ROWS if door == "rest" else Policy.APPLIES for door in DOORS}
"""What an overwrite asks of each door: every door that hands out rows returns the new ones (the table has no rule a
door could refuse, and the Iceberg view is published again with the new rows)."""


def _assert_overwrite_cell(door: str, outcome: Outcome, expected: pa.Table) -> None:
    if isinstance(outcome, Refused):
        assert OVERWRITE_DOORS[door] is Policy.NO_ROWS, f"{door} must return the new rows, but refused: {outcome}"
        return
    _assert_cell(door, outcome, expected)


@pytest.mark.parametrize("door", list(DOORS))
def should_return_exactly_the_new_rows_or_refuse_at_every_door(local: LocalDoors, overwriting: int, door: str) -> None:
    # Given a table holding 1,000 rows, overwritten by 300 new ones (100 of them of keys it held)
    expected = local.table("overwritten").scan().to_arrow()
    assert _canonical(expected) == _canonical(_overwrite_rows())
    # When its rows are read through the door, then they are exactly the new rows, or a refusal
    _assert_overwrite_cell(door, local.read(door, "overwritten"), expected)


def should_read_the_old_rows_as_of_before_the_overwrite(local: LocalDoors, overwriting: int) -> None:
    # Given the overwritten table, whose old files await the garbage collector
    table = local.table("overwritten")
    # When it is read as of the transaction before the overwrite, then it gives the old rows; as of it, the new ones
    assert _canonical(table.scan(as_of=overwriting - 1).to_arrow()) == _canonical(_stored_rows())
    assert _canonical(table.scan(as_of=overwriting).to_arrow()) == _canonical(_overwrite_rows())


@pytest.mark.aws
@pytest.mark.parametrize("door", AWS_DOORS)
def should_return_exactly_the_new_rows_or_refuse_at_every_aws_door(aws: AwsDoors, door: str) -> None:
    # Given a table on AWS overwritten by new rows (Table.overwrite writes in the calling process on either runtime)
    if "overwritten" not in aws.tables:
        table = _overwritten_table(aws.instance, "doors-overwritten")
        number = table.overwrite(_overwrite_rows())
        assert _canonical(table.scan(as_of=number - 1).to_arrow()) == _canonical(_stored_rows())
        aws.tables["overwritten"] = table
    expected = aws.tables["overwritten"].scan().to_arrow()
    assert _canonical(expected) == _canonical(_overwrite_rows())
    # When its rows are read through the door's Lambda handler, then they are exactly the new rows, or a refusal
    _assert_overwrite_cell(door, aws.read(door, "overwritten"), expected)
