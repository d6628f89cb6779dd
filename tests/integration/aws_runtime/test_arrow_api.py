"""The Python API with Arrow in and out, the same on a local instance and an AWS instance on the moto server (issue
15): ingest from a path relative to the working directory, pandas, polars and a DuckDB relation; scans returning the
same rows through every ``to_*`` method; ``limit``; metadata as Arrow. On AWS, ``ingest`` sends an ingest job as
Sleeper's client does and waits for the tracker: an ingest task stand-in runs the job queue in a thread; a scan through
the query queue is answered by the query functions' handlers, run in a thread as Lambda would run them."""

from __future__ import annotations

import threading
import uuid
from abc import ABC, abstractmethod
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Self

import duckdb
import pandas as pd
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import sleeper
from sleeper.api.ingest_job import IngestJobError, IngestJobSent
from sleeper.api.table import Table
from sleeper.core.exceptions import SleeperError
from sleeper.core.filter import FilterError
from sleeper.core.operations import INGEST_JOB_Q, LEAF_PARTITION_QUERY_Q, QUERY_Q, STATE_STORE_COMMITTER_Q
from sleeper.ingest.entry import run_ingest_job
from sleeper.io.arrow_types import arrow_schema
from sleeper.io.exceptions import MissingFileError
from sleeper.lambdas import sqs
from sleeper.runtime.aws.instance import AwsInstance
from sleeper.statestore.committer import handle_commit_request
from tests.integration.aws_runtime.conftest import drain_event

pytestmark = [pytest.mark.integration, pytest.mark.aws]

ARROW_SCHEMA = pa.schema([("name", pa.string()), ("age", pa.int64())])
SCHEMA = sleeper.Schema.from_arrow(ARROW_SCHEMA, row_keys=["name"])
TABLE_ARROW = arrow_schema(SCHEMA)
"""The table's Arrow schema: the row key is not nullable."""


class _Background(ABC):
    """A thread doing a deployed component's work on an AWS instance while the context is open."""

    def __init__(self, instance: AwsInstance) -> None:
        self._instance = instance
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join(timeout=30)

    @abstractmethod
    def _loop(self) -> None:
        """The component's work, until ``self._stop`` is set."""


class _IngestTask(_Background):
    """Runs every message of an AWS instance's ingest job queue while it lives, as a deployed ingest task would, and
    of its state store committer's queue, as the committer Lambda would (tables commit ingest asynchronously by
    default)."""

    def _loop(self) -> None:
        queue = self._instance.queue(INGEST_JOB_Q)
        committer = self._instance.queue(STATE_STORE_COMMITTER_Q)
        while not self._stop.is_set():
            for message in queue.receive(10, wait_seconds=0):
                run_ingest_job(self._instance, message.body)
                queue.delete(message.receipt_handle)
            for message in committer.receive(10, wait_seconds=0):
                handle_commit_request(self._instance, message.body)
                committer.delete(message.receipt_handle)
            self._stop.wait(0.2)


@pytest.fixture(params=["local", "aws"])
def any_instance(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    """A new local instance, or the module's AWS instance with an ingest task running its job queue."""
    if request.param == "local":
        yield sleeper.create_instance(tmp_path / "instance")
    else:
        instance: AwsInstance = request.getfixturevalue("instance")
        with _IngestTask(instance):
            yield instance


def _table(instance: Any) -> Table[Any]:
    table: Table[Any] = instance.create_table(f"arrow-{uuid.uuid4().hex[:8]}", SCHEMA, split_points=["m"])
    return table


def should_ingest_a_relative_path_pandas_polars_and_duckdb_and_scan_them_through_every_method(
    any_instance: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a table, and Parquet files in a directory under the working directory
    table = _table(any_instance)
    monkeypatch.chdir(tmp_path)
    Path("parquet-files").mkdir()
    pq.write_table(
        pa.table({"name": ["alice", "bob"], "age": [31, 42]}, schema=ARROW_SCHEMA), "parquet-files/a.parquet"
    )

    # When rows are ingested from the relative path, a pandas, a polars DataFrame and a DuckDB relation
    results = [
        table.ingest("parquet-files/"),
        table.ingest(pd.DataFrame({"name": ["carol", "zoe"], "age": [55, 27]})),
        table.ingest(pl.DataFrame({"name": ["nina"], "age": [19]})),
        table.ingest(duckdb.sql("SELECT 'oscar' AS name, 64::BIGINT AS age")),
    ]

    # Then every row was committed, and each to_* method returns the same rows in key order
    assert [r.rows_written for r in results] == [2, 2, 1, 1]
    expected = pa.table(
        {"name": ["alice", "bob", "carol", "nina", "oscar", "zoe"], "age": [31, 42, 55, 19, 64, 27]},
        schema=TABLE_ARROW,
    )
    scan = table.scan()
    assert scan.to_arrow().equals(expected)
    assert scan.to_arrow_batch_reader().read_all().equals(expected)
    assert pa.Table.from_pandas(scan.to_pandas(), schema=TABLE_ARROW, preserve_index=False).equals(expected)
    assert scan.to_polars().to_arrow().cast(TABLE_ARROW).equals(expected)
    connection = scan.to_duckdb("people")
    assert connection.sql("SELECT * FROM people ORDER BY name").arrow().read_all().cast(TABLE_ARROW).equals(expected)
    assert scan.count() == 6
    # And a limit, keys, ranges and columns select as asked
    assert table.scan(limit=2).to_arrow().equals(expected.slice(0, 2))
    assert table.scan(limit=0).to_arrow().num_rows == 0
    assert table.scan(keys=[{"name": "nina"}]).to_arrow().to_pylist() == [{"name": "nina", "age": 19}]
    assert table.scan(ranges={"name": ("b", "o")}, columns=["age", "name"]).to_arrow().to_pylist() == [
        {"age": 42, "name": "bob"},
        {"age": 55, "name": "carol"},
        {"age": 19, "name": "nina"},
    ]
    # And the metadata is Arrow too: a file per ingest per leaf it reached, and the three partitions
    files = table.inspect.files()
    assert pa.compute.sum(files["number_of_rows"]).as_py() == 6
    partitions = table.inspect.partitions()
    bounds = zip(partitions["name_min"].to_pylist(), partitions["name_max"].to_pylist(), strict=True)
    assert sorted(bounds, key=str) == sorted([("", None), ("", "m"), ("m", None)], key=str)


def should_refuse_what_cannot_be_ingested_naming_it_on_either_runtime(
    any_instance: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a table
    table = _table(any_instance)
    monkeypatch.chdir(tmp_path)
    # When data of no accepted form, or a local path naming nothing, is ingested
    with pytest.raises(SleeperError, match="cannot ingest data of type dict: give Parquet paths"):
        table.ingest({"name": "x", "age": 1})
    with pytest.raises(MissingFileError, match="no file or directory parquet-files/"):
        table.ingest("parquet-files/")
    # Then nothing was added
    assert table.scan().count() == 0


def should_send_an_ingest_job_without_waiting_and_raise_when_a_job_is_rejected(instance: AwsInstance) -> None:
    # Given a table of the AWS instance, with no ingest task running
    table = _table(instance)

    # When rows are ingested without waiting
    sent = table.ingest(pa.table({"name": ["x"], "age": [1]}, schema=ARROW_SCHEMA), wait=False)

    # Then an ingest job naming one staged file under for_ingest/ in the data bucket is on the ingest job queue
    assert isinstance(sent, IngestJobSent)
    assert sent.files == (f"s3a://{instance.data_bucket}/for_ingest/{sent.job_id}.parquet",)
    with _IngestTask(instance):
        # And an S3 path that names nothing makes a job that is rejected: waiting for it raises with the reason
        with pytest.raises(IngestJobError, match="rejected"):
            table.ingest(f"s3a://{instance.data_bucket}/nothing-here/", timeout_seconds=60)
        # And the job sent earlier is run by the task
        table.ingest(pa.table({"name": ["y"], "age": [2]}, schema=ARROW_SCHEMA))
    assert table.scan().to_arrow().to_pylist() == [{"name": "x", "age": 1}, {"name": "y", "age": 2}]


class _QueryFunctions(_Background):
    """Delivers an AWS instance's query queue and leaf partition query queue to their Lambda handlers while it lives,
    as the deployed query functions would."""

    def _loop(self) -> None:
        while not self._stop.is_set():
            for logical_name, handler in ((QUERY_Q, sqs.query), (LEAF_PARTITION_QUERY_Q, sqs.leaf_partition_query)):
                event = drain_event(self._instance, logical_name)
                if event["Records"]:
                    handler(event)
            self._stop.wait(0.2)


def should_scan_through_the_query_queue_returning_the_rows_of_a_direct_scan(any_instance: Any) -> None:
    # Given a table of two leaves with rows in both
    table = _table(any_instance)
    table.ingest(pa.table({"name": ["alice", "bob", "nina", "zoe"], "age": [31, 42, 19, 27]}, schema=ARROW_SCHEMA))

    completed_before = _completed_queries(any_instance)

    # When it is scanned through the query queue (on AWS answered by the query functions), whole and in part
    def both(**selection: Any) -> tuple[pa.Table, pa.Table]:
        return table.scan(via_queue=True, **selection).to_arrow(), table.scan(**selection).to_arrow()

    if isinstance(any_instance, AwsInstance):
        with _QueryFunctions(any_instance):
            every, part = both(), both(ranges={"name": ("b", "o")}, columns=["age", "name"])
    else:
        every, part = both(), both(ranges={"name": ("b", "o")}, columns=["age", "name"])

    # Then the queued scans return the rows of the direct scans, in key order, with the columns asked for
    assert every[0].equals(every[1]) and every[0].num_rows == 4
    assert part[0].equals(part[1]) and part[0].to_pylist() == [{"age": 42, "name": "bob"}, {"age": 19, "name": "nina"}]
    # And the two queries went through the query tracker, which records them completed
    assert _completed_queries(any_instance) - completed_before == 2


def should_filter_on_any_column_the_same_way_directly_and_through_the_query_queue(any_instance: Any) -> None:
    # Given a table of two leaves with rows in both
    table = _table(any_instance)
    rows = {"alice": 31, "bob": 42, "carol": 55, "nina": 19, "oscar": 64, "zoe": 27}
    table.ingest(pa.table({"name": list(rows), "age": list(rows.values())}, schema=ARROW_SCHEMA))
    filters = {
        "age >= 40": ["bob", "carol", "oscar"],
        "name starts with 'o' or age < 20": ["nina", "oscar"],
        "name between 'b' and 'o' and not (age in (42, 55))": ["nina"],
        "age > 100": [],
    }

    # When it is scanned with each filter, directly and through the query queue (on AWS answered by the functions)
    def scans() -> dict[str, tuple[list[str], list[str]]]:
        return {
            text: (
                table.scan(filter=text).to_arrow()["name"].to_pylist(),
                table.scan(filter=text, via_queue=True).to_arrow()["name"].to_pylist(),
            )
            for text in filters
        }

    if isinstance(any_instance, AwsInstance):
        with _QueryFunctions(any_instance):
            got = scans()
    else:
        got = scans()

    # Then both doors return the rows the filter selects, in key order
    assert got == {text: (names, names) for text, names in filters.items()}
    # And a bad filter is refused on both doors before anything is sent
    with pytest.raises(FilterError, match="no column 'agee'"):
        table.scan(filter="agee > 3", via_queue=True)


def _completed_queries(instance: Any) -> int:
    return sum(
        1 for q in instance.query_tracker.all_queries() if q.is_parent and q.last_known_state.value == "COMPLETED"
    )


def should_refuse_queue_options_that_do_not_apply(tmp_path: Path) -> None:
    # Given a table of a local instance
    table = _table(sleeper.create_instance(tmp_path / "instance"))

    # When a scan asks for what a queued scan cannot do, or for queue options without the queue
    # Then it is refused before anything is sent
    with pytest.raises(SleeperError, match="cannot be used with via_queue=True"):
        table.scan(via_queue=True, as_of=1)
    with pytest.raises(SleeperError, match="queue_results must be one of s3, sqs, got 'ftp'"):
        table.scan(via_queue=True, queue_results="ftp")
    with pytest.raises(SleeperError, match="apply to a scan with via_queue=True only"):
        table.scan(queue_results="sqs")
    assert table.instance.query_tracker.all_queries() == []
