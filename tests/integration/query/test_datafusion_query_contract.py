"""The contract between the query engines: a table whose ``sleeper.table.data.engine`` is DATAFUSION returns exactly
the rows the pyarrow read returns, in the same order, for leaf queries and whole-table scans, on local files and on S3
(a moto server), read in this process or by worker processes over key ranges; and a queued query honours the engine.

Skipped without ``datafusion``.
"""

from __future__ import annotations

import dataclasses
import random
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Final

import pyarrow as pa
import pytest
from pyarrow import fs as pafs

import sleeper.io.data_engine as data_engine
import sleeper.query.datafusion_read as datafusion_read
from sleeper.adapters.aws.s3_publish import s3_client
from sleeper.core.filter import filter_of
from sleeper.core.properties.properties import TableProperties
from sleeper.core.query import Query, QueryProcessingConfig
from sleeper.core.range import Range, Region
from sleeper.core.schema import Field, KeyValue, PrimitiveType, Schema
from sleeper.core.statestore.references import FileReference
from sleeper.io.exceptions import EngineUnavailableError, MissingFileError
from sleeper.io.filesystem import FileSystemOptions, S3Options, s3_filesystem
from sleeper.io.parquet import ParquetSettings
from sleeper.query.executor import execute, plan_table_query, query_iterators, region_bounds, run_leaf_query
from sleeper.query.planner import leaf_regions
from tests.unit.compaction.execution_fixtures import FakeTable, new_table

pytest.importorskip("datafusion")

pytestmark = pytest.mark.integration

REGION: Final = "eu-west-2"
NOW_MS: Final = 1_700_000_000_000


@pytest.fixture(scope="module")
def endpoint() -> str:
    """This process's moto server (unique bucket names keep the tests apart)."""
    from tests.contract.aws_backends import moto_endpoint

    return moto_endpoint()


@pytest.fixture
def fused(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts the DataFusion leaf reads (so a test shows DataFusion read its rows)."""
    calls: list[int] = []
    real = datafusion_read.datafusion_leaf_read

    def counted(*args: Any, **kwargs: Any) -> datafusion_read.DataFusionLeafRead:
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(datafusion_read, "datafusion_leaf_read", counted)
    return calls


def _schema(key_type: PrimitiveType) -> Schema:
    return Schema.of(
        row_keys=[Field("key", key_type)],
        sort_keys=[Field("sort", PrimitiveType.INT)],
        values=[Field("value", PrimitiveType.LONG), Field("payload", PrimitiveType.STRING)],
    )


def _key(number: int, key_type: PrimitiveType) -> Any:
    if key_type is PrimitiveType.LONG:
        return number * 1_000_000_007
    return f"k{number + 100:03d}" if key_type is PrimitiveType.STRING else bytes([number + 100])


def _tables(
    where: str, key_type: PrimitiveType, tmp_path: Path, endpoint: str | None, properties: dict[str, str]
) -> tuple[FakeTable, FakeTable, FileSystemOptions | None]:
    """One table twice: with the ARROW and the DATAFUSION data engine."""
    splits: dict[PrimitiveType, KeyValue] = {
        PrimitiveType.LONG: 0,
        PrimitiveType.STRING: "k100",
        PrimitiveType.BYTE_ARRAY: b"\x64",
    }
    options = None
    if where == "local":
        filesystem: pafs.FileSystem = pafs.LocalFileSystem()
        prefix = str(tmp_path)
    else:
        assert endpoint is not None
        options = FileSystemOptions(
            s3=S3Options(region=REGION, endpoint_override=endpoint, access_key="testing", secret_key="testing")
        )
        bucket = f"sleeper-query-engines-{uuid.uuid4().hex[:12]}"
        s3_client(options.s3).create_bucket(Bucket=bucket, CreateBucketConfiguration={"LocationConstraint": REGION})
        filesystem = s3_filesystem(options.s3)
        prefix = f"s3://{bucket}"
    arrow = new_table(_schema(key_type), split_points=[splits[key_type]], properties=properties, filesystem=filesystem)
    arrow.prefix = prefix
    values = {**arrow.properties.to_dict(), "sleeper.table.data.engine": "DATAFUSION"}
    fusion = dataclasses.replace(arrow, properties=TableProperties(arrow.properties.instance_properties, values))
    return arrow, fusion, options


def _rows(rng: random.Random, key_type: PrimitiveType, name: str, rows: int) -> pa.Table:
    """Rows with keys repeated within and across files (equal row and sort keys too), told apart by their payload."""
    return pa.table(
        {
            "key": [_key(rng.randrange(-60, 60), key_type) for _ in range(rows)],
            "sort": pa.array([rng.randrange(3) for _ in range(rows)], pa.int32()),
            "value": pa.array([rng.randrange(1000) for _ in range(rows)], pa.int64()),
            "payload": [f"{name}-row{i}" for i in range(rows)],
        }
    )


def _add(table: FakeTable, data: pa.Table, partitions: list[str]) -> None:
    written = table.write_file(data, settings=ParquetSettings(row_group_rows=50))
    table.state_store.add_files(
        [
            FileReference(
                filename=written.location,
                partition_id=partition,
                number_of_rows=written.rows,
                count_approximate=len(partitions) > 1,
                only_contains_data_for_this_partition=len(partitions) == 1,
            )
            for partition in partitions
        ]
    )


def _fill(table: FakeTable, key_type: PrimitiveType, *, deletes: bool) -> None:
    """Three files on the root shared by both leaves and one on each leaf (so each leaf merges four); with
    ``deletes``, two pending deletes hide rows of the files written before them, then one more file is added."""
    rng = random.Random(11)
    leaves = [table.leaf(0).id, table.leaf(1).id]
    for number in range(3):
        _add(table, _rows(rng, key_type, f"shared{number}", 300), leaves)
    for number, leaf in enumerate(leaves):
        _add(table, _rows(rng, key_type, f"leaf{number}", 200), [leaf])
    if deletes:
        table.state_store.delete_rows("value < 150")
        table.state_store.delete_rows(f"key in ({_literal(_key(-5, key_type))}, {_literal(_key(30, key_type))})")
        _add(table, _rows(rng, key_type, "late", 300), leaves)


def _literal(value: Any) -> str:
    if isinstance(value, bytes):
        return "X'" + value.hex() + "'"
    return repr(value) if isinstance(value, str) else str(value)


def _queries(schema: Schema) -> Iterator[tuple[str, Query]]:
    key = schema.field("key")
    kind = key.primitive_type
    whole = Region.whole(schema)
    across = Region.of([Range(field=key, min=_key(-20, kind), max=_key(25, kind))])
    low = Region.of([Range(field=key, min=_key(-58, kind), max=_key(-50, kind), max_inclusive=True)])
    exact = Region.exact(schema, [_key(3, kind)])

    def query(regions: tuple[Region, ...], **processing: Any) -> Query:
        return Query(
            query_id=str(uuid.uuid4()),
            table_name="t",
            regions=regions,
            processing=QueryProcessingConfig(**processing),
        )

    yield "whole table", query((whole,))
    yield "two ranges", query((across, low))
    yield "one key", query((exact,))
    yield "value filter", query((whole,), filter=filter_of("value >= 500 AND payload <> 'shared1-row7'", schema))
    pushed = filter_of("sort >= 1 AND sort BETWEEN 1 AND 2 AND value <= 700", schema)
    yield "pushed filter", query((whole,), filter=pushed)
    yield (
        "key filter and fields",
        query((across,), filter=filter_of("sort = 1", schema), requested_value_fields=("payload",)),
    )


def _run(table: FakeTable, query: Query, options: FileSystemOptions | None, limit: int | None = None) -> list[Any]:
    rows: list[Any] = (
        execute(query, table, now_ms=NOW_MS, options=options, batch_rows=64, limit=limit).read_all().to_pylist()
    )
    return rows


def _leaves(table: FakeTable, query: Query, options: FileSystemOptions | None) -> list[list[Any]]:
    """Each sub-query's rows, run as a leaf query Lambda runs it (the engine given explicitly)."""
    config = query_iterators(table.properties, table.schema, query.processing, NOW_MS)
    engine = table.properties.get("sleeper.table.data.engine")
    out = []
    for leaf in plan_table_query(query, table.state_store, table_id=table.table_id, schema=table.schema):
        batches = run_leaf_query(leaf, table.schema, config, NOW_MS, options=options, batch_rows=64, engine=engine)
        out.append(pa.Table.from_batches(list(batches), schema=None).to_pylist() if leaf.files else [])
    return out


@pytest.mark.parametrize(
    ("where", "key_type", "processing", "chunked"),
    [
        ("local", PrimitiveType.LONG, "plain", False),
        ("local", PrimitiveType.STRING, "aggregated", False),
        ("local", PrimitiveType.BYTE_ARRAY, "deleted", False),
        ("local", PrimitiveType.LONG, "deleted", True),
        ("local", PrimitiveType.STRING, "plain", True),
        ("moto", PrimitiveType.STRING, "deleted", False),
        ("moto", PrimitiveType.LONG, "aggregated", True),
    ],
)
def should_return_exactly_the_rows_of_the_arrow_engine(
    request: pytest.FixtureRequest,
    monkeypatch: pytest.MonkeyPatch,
    fused: list[int],
    tmp_path: Path,
    where: str,
    key_type: PrimitiveType,
    processing: str,
    chunked: bool,
) -> None:
    # Given a table whose leaves merge several files with repeated keys, with aggregations or pending deletes
    endpoint = request.getfixturevalue("endpoint") if where == "moto" else None
    properties = {"sleeper.table.aggregations": "sum(value),max(payload)" if processing == "aggregated" else ""}
    arrow, fusion, options = _tables(where, key_type, tmp_path, endpoint, properties)
    _fill(arrow, key_type, deletes=processing == "deleted")
    queries = list(_queries(arrow.schema))
    if chunked:  # reads split into key ranges of about 250 rows, each a task of its own
        monkeypatch.setattr(datafusion_read, "CHUNK_ROWS", 250)

    for name, query in queries:
        # When each engine runs the query, whole and leaf by leaf
        by_arrow = _run(arrow, query, options)
        calls = len(fused)
        by_fusion = _run(fusion, query, options)

        # Then DataFusion read the leaves, and both gave the same rows in the same order
        assert len(fused) > calls, name
        assert by_fusion == by_arrow, name
        assert _leaves(fusion, query, options) == _leaves(arrow, query, options), name
        assert _run(fusion, query, options, limit=37) == by_arrow[:37], name
    assert len(by_arrow) > 0


def should_read_only_the_key_ranges_a_query_reaches_and_reuse_workers_until_retired(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # Given a table whose reads are split into key ranges of about 250 rows, and idle workers stopped
    arrow, fusion, _ = _tables("local", PrimitiveType.LONG, tmp_path, None, {"sleeper.table.aggregations": ""})
    _fill(arrow, PrimitiveType.LONG, deletes=False)
    monkeypatch.setattr(datafusion_read, "CHUNK_ROWS", 250)
    datafusion_read._POOL.close()
    tasks: list[datafusion_read._LeafTask] = []
    real = datafusion_read._Worker.run

    def run(worker: datafusion_read._Worker, task: datafusion_read._LeafTask) -> Iterator[pa.RecordBatch]:
        tasks.append(task)
        return real(worker, task)

    monkeypatch.setattr(datafusion_read._Worker, "run", run)
    whole = next(q for name, q in _queries(arrow.schema) if name == "whole table")
    narrow = next(q for name, q in _queries(arrow.schema) if name == "one key")
    started = datafusion_read._POOL.started

    # When the whole table is scanned, and then one key looked up
    assert _run(fusion, whole, None) == _run(arrow, whole, None)
    scanned = len(tasks)
    tasks.clear()
    assert _run(fusion, narrow, None) == _run(arrow, narrow, None)

    # Then the scan ran several key ranges per leaf on one worker, and the lookup only its key's range, on it too
    assert scanned > 4
    assert len(tasks) == 1
    assert datafusion_read._POOL.started == started + 1

    # And once a worker's tasks reach the retirement rows, it is replaced by a new one for the next read
    monkeypatch.setattr(datafusion_read, "RECYCLE_ROWS", 1)
    assert _run(fusion, narrow, None) == _run(arrow, narrow, None)
    assert _run(fusion, narrow, None) == _run(arrow, narrow, None)
    assert datafusion_read._POOL.started == started + 3


def should_push_the_filter_parts_datafusion_tests_exactly_into_its_scans(tmp_path: Path) -> None:
    # Given a leaf of a table and a filter with parts DataFusion can test and a part it is not given
    _, fusion, _ = _tables("local", PrimitiveType.LONG, tmp_path, None, {"sleeper.table.aggregations": ""})
    _fill(fusion, PrimitiveType.LONG, deletes=False)
    schema = fusion.schema
    query = next(q for name, q in _queries(schema) if name == "whole table")
    leaf = plan_table_query(query, fusion.state_store, table_id=fusion.table_id, schema=schema)[0]
    bounds = [region_bounds(r) for r in leaf_regions(leaf.regions, leaf.partition_region)]
    pushed = filter_of("value >= 500 AND payload LIKE 'shared%' AND sort BETWEEN 1 AND 2", schema)

    # When its DataFusion plan is made with the filter pushed
    frame = datafusion_read.datafusion_plan_of_leaf(
        leaf.files, schema, bounds, list(schema.field_names), batch_rows=64, pushed=pushed
    )
    plan = frame.execution_plan().display_indent()

    # Then each scan tests the comparisons (pruning row groups by them), and not the LIKE
    assert "value@2 >= 500" in plan
    assert "sort@1 >= 1" in plan and "sort@1 <= 2" in plan
    assert "shared" not in plan
    assert "SortExec" not in plan


def should_fail_a_read_whose_worker_fails_and_not_reuse_that_worker(tmp_path: Path) -> None:
    # Given a leaf read planned, and then one of its files gone before it is read
    arrow, fusion, _ = _tables("local", PrimitiveType.LONG, tmp_path, None, {"sleeper.table.aggregations": ""})
    _fill(arrow, PrimitiveType.LONG, deletes=False)
    query = next(q for name, q in _queries(arrow.schema) if name == "whole table")
    leaf = plan_table_query(query, fusion.state_store, table_id=fusion.table_id, schema=fusion.schema)[0]
    names = list(fusion.schema.field_names)
    bounds = [region_bounds(r) for r in leaf_regions(leaf.regions, leaf.partition_region)]
    read = datafusion_read.datafusion_leaf_read(leaf.files, fusion.schema, bounds, names, batch_rows=64)
    Path(leaf.files[-1].removeprefix("file://")).unlink()
    started = datafusion_read._POOL.started

    # When it is read, then the worker's error is raised as the pyarrow read raises it, naming the file
    with pytest.raises(MissingFileError, match=Path(leaf.files[-1]).name):
        list(read)

    # And the next read gets a worker that works
    datafusion_read.stop_workers()
    _add(arrow, _rows(random.Random(5), PrimitiveType.LONG, "again", 100), [arrow.leaf(0).id])
    again = next(q for name, q in _queries(arrow.schema) if name == "one key")
    assert _run(fusion, again, None) == _run(arrow, again, None)
    assert datafusion_read._POOL.started > started


def should_refuse_datafusion_when_it_is_not_installed(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    # Given a table asking for DATAFUSION where the package is missing
    _, fusion, _ = _tables("local", PrimitiveType.LONG, tmp_path, None, {})
    monkeypatch.setattr(data_engine, "datafusion_available", lambda: False)
    query = next(q for _, q in _queries(fusion.schema))

    # When it is queried, then the error says what to install or set
    with pytest.raises(EngineUnavailableError, match="datafusion"):
        _run(fusion, query, None)


def should_read_with_arrow_where_the_engine_is_left_at_its_default(fused: list[int], tmp_path: Path) -> None:
    # Given a table that does not set the engine (nor does its instance)
    arrow, _, _ = _tables("local", PrimitiveType.LONG, tmp_path, None, {})
    _fill(arrow, PrimitiveType.LONG, deletes=False)
    values = {k: v for k, v in arrow.properties.to_dict().items() if k != "sleeper.table.data.engine"}
    default = dataclasses.replace(arrow, properties=TableProperties(arrow.properties.instance_properties, values))
    query = next(q for _, q in _queries(default.schema))

    # When it is queried, then the pyarrow read is used
    assert _run(default, query, None) == _run(arrow, query, None)
    assert fused == []


def _queued(tmp_path: Path, engine: str) -> Callable[[], list[Any]]:
    """A queued query of a local instance's table with the engine set: runs it, returns its published rows."""
    import pyarrow.parquet as pq

    from sleeper.adapters.memory.queue import InMemoryQueues
    from sleeper.adapters.memory.trackers import InMemoryQueryTracker
    from sleeper.core.query import QuerySerDe
    from sleeper.query.publishers import PublisherSettings, results_path, results_publisher
    from sleeper.query.queued import handle_leaf_query_message, handle_query_message
    from sleeper.runtime.local.instance import LocalInstance

    schema = Schema.of(row_keys=[Field("key", PrimitiveType.LONG)], values=[Field("value", PrimitiveType.STRING)])
    instance = LocalInstance.create(tmp_path / f"instance-{engine}")
    table = instance.create_table("t", schema, split_points=[100, 200])
    table.set_properties({"sleeper.table.data.engine": engine})
    for start in (0, 1):
        keys = list(range(start, 300, 2)) + [7, 150]
        table.ingest(pa.table({"key": pa.array(keys, pa.int64()), "value": [f"{start}-{k}" for k in keys]}))
    region = Region.of([Range(field=schema.field("key"), min=50, max=250)])
    message = QuerySerDe.for_schema(schema).to_json(Query(query_id="q", table_name="t", regions=(region,)))

    def run() -> list[Any]:
        leaf_queue = InMemoryQueues().queue("LeafPartitionQueryQueue")
        tracker = InMemoryQueryTracker()
        outcome = handle_query_message(message, tables=instance, leaf_queue=leaf_queue, tracker=tracker)
        results = (tmp_path / f"results-{engine}").as_uri()
        publish = results_publisher(PublisherSettings(results_uri=results))
        for received in leaf_queue.receive(10):
            handle_leaf_query_message(received.body, tables=instance, tracker=tracker, publish=publish)
        ordered = sorted(outcome.sub_queries, key=lambda q: q.partition_region.ranges["key"].canonical_min)
        rows: list[Any] = []
        for sub_query in ordered:
            rows.extend(pq.read_table(results_path(results, sub_query).removeprefix("file://")).to_pylist())
        return rows

    return run


def should_run_a_queued_query_with_the_table_engine(fused: list[int], tmp_path: Path) -> None:
    # Given the same table on a local instance set to each engine
    by_arrow = _queued(tmp_path, "ARROW")()
    assert fused == []

    # When a queued query runs on the DATAFUSION one
    by_fusion = _queued(tmp_path, "DATAFUSION")()

    # Then its sub-queries were read by DataFusion, and returned the same rows
    assert len(by_arrow) > 200
    assert by_fusion == by_arrow
    assert len(fused) == 3
