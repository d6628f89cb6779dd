"""Athena's pushed-down constraints on any column become a filter in the connectors' reads, on a local instance: the
rows returned equal ``Table.scan(filter=...)`` of the same predicate, a value-column constraint skips the row groups
its statistics rule out (before the table's rules only where they only drop rows), and the filter applies after the
table's rules."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from sleeper.api.table import Table
from sleeper.athena import AthenaSettings, iterator_applying_connector, simple_connector
from sleeper.athena.handlers import CompositeHandler
from sleeper.core.schema import Field, PrimitiveType, Schema
from sleeper.io.parquet_reader import SortedFileReader
from sleeper.runtime.local.instance import LocalInstance
from tests.unit.athena import federation_requests as fr

pytestmark = pytest.mark.integration

SCHEMA = Schema.of(
    row_keys=[Field("key", PrimitiveType.LONG)],
    values=[
        Field("age", PrimitiveType.INT, True),
        Field("name", PrimitiveType.STRING, True),
        Field("ts", PrimitiveType.LONG),
    ],
)
ROWS = 3_000
SPLITS = [1_000, 2_000]
I32, I64, STR = pa.int32(), pa.int64(), pa.string()

# (Athena's constraints summary, the same predicate in the filter language)
CASES: list[tuple[dict[str, Any], str]] = [
    ({"age": fr.sorted_ranges([(10, "EXACTLY", 20, "BELOW")], I32)}, "age >= 10 and age < 20"),
    (
        {"age": fr.sorted_ranges([(None, "ABOVE", 5, "BELOW"), (95, "ABOVE", None, "BELOW")], I32)},
        "age < 5 or age > 95",
    ),
    ({"age": fr.sorted_ranges([(7, "EXACTLY", 7, "EXACTLY"), (9, "EXACTLY", 9, "EXACTLY")], I32)}, "age in (7, 9)"),
    ({"age": fr.equatable([1, 2, 3], I32)}, "age in (1, 2, 3)"),
    ({"age": fr.equatable([1, 2], I32, white_list=False, null_allowed=True)}, "age not in (1, 2) or age is null"),
    ({"age": fr.sorted_ranges([(50, "ABOVE", None, "BELOW")], I32, null_allowed=True)}, "age > 50 or age is null"),
    ({"name": fr.all_or_none(STR, all_values=False, null_allowed=True)}, "name is null"),
    ({"name": fr.all_or_none(STR, all_values=True, null_allowed=False)}, "name is not null"),
    ({"name": fr.sorted_ranges([("n7", "EXACTLY", "n7", "EXACTLY")], STR)}, "name = 'n7'"),
    (
        {
            "key": fr.sorted_ranges([(990, "EXACTLY", 1010, "EXACTLY")], I64),
            "age": fr.sorted_ranges([(None, "ABOVE", 50, "BELOW")], I32),
        },
        "key between 990 and 1010 and age < 50",
    ),
    ({"ts": fr.sorted_ranges([(29_700, "EXACTLY", None, "BELOW")], I64)}, "ts >= 29700"),
    ({"age": fr.sorted_ranges([(200, "EXACTLY", None, "BELOW")], I32)}, "age >= 200"),
]


def _input() -> pa.Table:
    return pa.table(
        {
            "key": pa.array(range(ROWS), pa.int64()),
            "age": pa.array([None if i % 13 == 0 else i % 100 for i in range(ROWS)], pa.int32()),
            "name": pa.array([None if i % 11 == 0 else f"n{i % 50}" for i in range(ROWS)], pa.string()),
            "ts": pa.array(range(0, ROWS * 10, 10), pa.int64()),
        }
    )


@pytest.fixture(scope="module")
def instance(tmp_path_factory: pytest.TempPathFactory) -> LocalInstance:
    local = LocalInstance.create(Path(tmp_path_factory.mktemp("athena-filter")) / "instance")
    table = local.create_table(
        "people", SCHEMA, split_points=SPLITS, properties={"sleeper.table.parquet.rowgroup.rows.max": "100"}
    )
    data = _input()
    table.ingest(data.slice(0, ROWS // 2))
    table.ingest(data.slice(ROWS // 2))
    return local


def _settings(instance: LocalInstance) -> AthenaSettings:
    return AthenaSettings(instance_id=str(instance.properties.get("sleeper.id")), spill_bucket="spill")


def _read(connector: CompositeHandler, instance: LocalInstance, table: str, summary: dict[str, Any]) -> pa.Table:
    """The rows Athena is given for a table through the connector, with these constraints in every request."""
    schema_name = str(instance.properties.get("sleeper.id"))
    full = fr.decode_schema(connector.handle(fr.get_table(schema_name, table))["schema"])
    layout = connector.handle(fr.get_table_layout(schema_name, table, full, summary))
    page = connector.handle(fr.get_splits(schema_name, table, layout["partitions"], summary))
    batches = []
    for split in page["splits"]:
        response = connector.handle(fr.read_records(schema_name, table, full, split, summary))
        batches.append(fr.decode_block(response["records"]))
    return pa.Table.from_batches(batches, schema=full)


def _rows(rows: pa.Table) -> list[dict[str, Any]]:
    ordered: list[dict[str, Any]] = rows.sort_by([(n, "ascending") for n in rows.column_names]).to_pylist()
    return ordered


CONNECTORS = {"iterator-applying": iterator_applying_connector, "simple": simple_connector}


@pytest.mark.parametrize("kind", list(CONNECTORS))
@pytest.mark.parametrize(("summary", "row_filter"), CASES, ids=[c[1] for c in CASES])
def should_return_the_rows_a_filtered_scan_returns(
    instance: LocalInstance, kind: str, summary: dict[str, Any], row_filter: str
) -> None:
    connector = CONNECTORS[kind](instance, _settings(instance))
    got = _read(connector, instance, "people", summary)
    expected = instance.table("people").scan(filter=row_filter).to_arrow()
    assert got.num_rows == expected.num_rows
    assert _rows(got) == _rows(expected.select(got.column_names))


class _RowGroups:
    """Records the row groups every data file read decodes."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.read: list[int] = []
        original = SortedFileReader.read_plan

        def recording(reader: SortedFileReader, plan: Any, **kwargs: Any) -> Any:
            self.read.extend(plan.row_groups)
            return original(reader, plan, **kwargs)

        monkeypatch.setattr(SortedFileReader, "read_plan", recording)


@pytest.mark.parametrize("kind", list(CONNECTORS))
def should_skip_the_row_groups_a_value_constraint_rules_out(
    instance: LocalInstance, kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a connector whose data file reads are recorded
    connector = CONNECTORS[kind](instance, _settings(instance))
    groups = _RowGroups(monkeypatch)
    # When the table is read whole, and then with a constraint on the value column "ts" (the last 1% of rows)
    every = _read(connector, instance, "people", {})
    whole = len(groups.read)
    groups.read.clear()
    last = _read(connector, instance, "people", {"ts": fr.sorted_ranges([(29_700, "EXACTLY", None, "BELOW")], I64)})
    # Then fewer rows come back, reading only the row group that can hold them
    assert every.num_rows == ROWS and last.num_rows == 30
    assert whole == 30 and len(groups.read) == 1


def _aggregated(instance: LocalInstance) -> Table[LocalInstance]:
    schema = Schema.of(row_keys=[Field("key", PrimitiveType.LONG)], values=[Field("count", PrimitiveType.LONG)])
    table = instance.create_table("summed", schema, properties={"sleeper.table.aggregations": "sum(count)"})
    data = pa.table({"key": pa.array(range(100), pa.int64()), "count": pa.array([1] * 100, pa.int64())})
    table.ingest(data)
    table.ingest(data)  # every key's count sums to 2, while every stored row has count 1
    return table


def should_apply_the_constraint_to_what_the_tables_rules_give(tmp_path: Path) -> None:
    # Given a table summing counts read through the iterator-applying connector
    instance = LocalInstance.create(tmp_path / "instance")
    table = _aggregated(instance)
    connector = iterator_applying_connector(instance, _settings(instance))
    # When Athena asks for count >= 2, Then every key comes back, summed (the files' statistics say count <= 1)
    two = _read(connector, instance, "summed", {"count": fr.sorted_ranges([(2, "EXACTLY", None, "BELOW")], I64)})
    assert _rows(two) == _rows(table.scan(filter="count >= 2").to_arrow())
    assert two["count"].to_pylist() == [2] * 100
    # And for count = 1, none does
    one = _read(connector, instance, "summed", {"count": fr.equatable([1], I64)})
    assert one.num_rows == 0
