"""Every supported type through an ingest job, then queries, each checked against DuckDB over the same Parquet file."""

from __future__ import annotations

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from sleeper.api.table import Table
from sleeper.core.jobs.ingest import IngestJob
from sleeper.core.range import Range, Region
from sleeper.core.schema import Field, ListType, MapType, PrimitiveType, Schema
from sleeper.core.trackers.runs import JobOutcome
from sleeper.ingest.job_runner import IngestJobRunner
from sleeper.runtime.local.api import LocalApi
from sleeper.runtime.local.instance import LocalInstance

pytestmark = pytest.mark.integration

SCHEMA = Schema.of(
    row_keys=[Field("name", PrimitiveType.STRING), Field("id", PrimitiveType.LONG)],
    sort_keys=[Field("version", PrimitiveType.INT)],
    values=[
        Field("blob", PrimitiveType.BYTE_ARRAY),
        Field("tags", ListType(PrimitiveType.STRING)),
        Field("scores", MapType(PrimitiveType.STRING, PrimitiveType.LONG)),
    ],
)
COLUMNS = ["name", "id", "version", "blob", "tags", "scores"]
ORDER = "name, id, version"


@pytest.fixture(scope="module")
def loaded(tmp_path_factory: pytest.TempPathFactory) -> tuple[Table[LocalInstance], str]:
    """A table with 4 leaves holding 3,000 rows ingested as a job from one Parquet file; the file's path."""
    directory = tmp_path_factory.mktemp("typed")
    rng = np.random.default_rng(11)
    rows = 3000
    names = [f"n{i:03d}" for i in rng.integers(0, 400, rows)]
    ids = rng.integers(-50, 50, rows)
    data = pa.table(
        {
            "name": pa.array(names, pa.string()),
            "id": pa.array(ids, pa.int64()),
            "version": pa.array(rng.integers(0, 5, rows), pa.int32()),
            "blob": pa.array([bytes([i % 256, (i * 7) % 256]) for i in range(rows)], pa.binary()),
            "tags": pa.array([[f"t{i % 3}"] * (i % 3) for i in range(rows)], pa.list_(pa.string())),
            "scores": pa.array(
                [[("a", i), ("b", -i)] if i % 2 else [] for i in range(rows)], pa.map_(pa.string(), pa.int64())
            ),
        }
    )
    path = directory / "input.parquet"
    pq.write_table(data, path)
    instance = LocalInstance.create(directory / "instance")
    instance.create_table("typed", SCHEMA, split_points=["n100", "n200", "n300"])
    outcome = IngestJobRunner(instance).run(IngestJob(id="typed-job", files=(str(path),), table_name="typed"))
    assert outcome.outcome is JobOutcome.FINISHED, outcome.reasons
    LocalApi(instance).apply_commits()  # the job sent its files to the state store committer
    return instance.table("typed"), str(path)


def _duckdb(path: str, where: str = "true") -> list[dict[str, object]]:
    sql = f"SELECT {', '.join(COLUMNS)} FROM read_parquet('{path}') WHERE {where} ORDER BY {ORDER}"
    result = duckdb.sql(sql).arrow()
    return _rows(result if isinstance(result, pa.Table) else result.read_all())


def _rows(table: pa.Table) -> list[dict[str, object]]:
    """Rows in key order; map values as sorted item lists (DuckDB and Arrow differ in how they give maps)."""
    out = []
    for row in table.select(COLUMNS).to_pylist():
        scores = row["scores"]
        row["scores"] = sorted(scores.items() if isinstance(scores, dict) else scores or [])
        out.append(row)
    return sorted(out, key=lambda r: (r["name"], r["id"], r["version"]))


def _within_key_order(rows: list[dict[str, object]]) -> list[dict[str, object]]:
    # Sleeper orders by row keys then sort keys; rows with equal keys keep no further order, so compare sorted
    return sorted(rows, key=lambda r: (r["name"], r["id"], r["version"], r["blob"]))  # type: ignore[arg-type]


def should_return_every_row_in_a_full_scan(loaded: tuple[Table[LocalInstance], str]) -> None:
    # Given the loaded table
    table, path = loaded
    # When every row is queried
    result = table.query()
    # Then they equal DuckDB's reading of the input
    assert _within_key_order(_rows(result)) == _within_key_order(_duckdb(path))


def should_return_exact_multi_field_keys(loaded: tuple[Table[LocalInstance], str]) -> None:
    # Given keys present in the input, and one absent
    table, path = loaded
    wanted = [("n007", 3), ("n250", -12), ("n399", 49), ("zzz", 1)]
    # When they are queried exactly
    result = table.query(keys=[list(k) for k in wanted])
    # Then the rows equal DuckDB's for the same keys
    where = " OR ".join(f"(name = '{n}' AND id = {i})" for n, i in wanted)
    assert _within_key_order(_rows(result)) == _within_key_order(_duckdb(path, where))


@pytest.mark.parametrize(
    ("min_inclusive", "max_inclusive"), [(True, False), (True, True), (False, False), (False, True)]
)
def should_return_ranges_with_each_inclusiveness(
    loaded: tuple[Table[LocalInstance], str], min_inclusive: bool, max_inclusive: bool
) -> None:
    # Given a range of names across a split point
    table, path = loaded
    name = SCHEMA.field("name")
    region = Region.of(
        [Range(field=name, min="n090", min_inclusive=min_inclusive, max="n210", max_inclusive=max_inclusive)]
    )
    # When it is queried
    result = table.query(regions=[region])
    # Then the rows equal DuckDB's for the same bounds
    low = ">=" if min_inclusive else ">"
    high = "<=" if max_inclusive else "<"
    expected = _duckdb(path, f"name {low} 'n090' AND name {high} 'n210'")
    assert expected
    assert _within_key_order(_rows(result)) == _within_key_order(expected)


def should_return_a_range_on_the_second_row_key(loaded: tuple[Table[LocalInstance], str]) -> None:
    # Given a range on the id field only
    table, path = loaded
    region = Region.of([Range(field=SCHEMA.field("id"), min=-5, max=5)])
    # When it is queried
    result = table.query(regions=[region])
    # Then the rows equal DuckDB's
    assert _within_key_order(_rows(result)) == _within_key_order(_duckdb(path, "id >= -5 AND id < 5"))
