"""One table facade for both runtimes: the same Python calls on a table of a local instance and of an AWS instance (on
the moto server) do the same, and ingest on AWS writes under the table's data prefix in the data bucket."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from sleeper.api.table import Table, TableInstance
from sleeper.core.exceptions import PropertyError, SleeperError
from sleeper.core.schema import Field, PrimitiveType, Schema
from sleeper.runtime.aws.instance import AwsInstance
from sleeper.runtime.local.instance import LocalInstance

pytestmark = [pytest.mark.integration, pytest.mark.aws]

KEY = Field("key", PrimitiveType.LONG)
SCHEMA = Schema(row_key_fields=(KEY,), value_fields=(Field("value", PrimitiveType.STRING),))
SPLIT_AT = 50
THRESHOLD = "sleeper.table.partition.splitting.threshold"


def _rows(start: int, stop: int) -> pa.Table:
    keys = list(range(start, stop))
    return pa.table({"key": pa.array(keys, pa.int64()), "value": pa.array([f"v{k}" for k in keys], pa.string())})


@pytest.fixture(params=["local", "aws"])
def any_instance(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[TableInstance]:
    """A local instance in a new directory, or the module's AWS instance on the moto server."""
    if request.param == "local":
        yield LocalInstance.create(tmp_path / "instance")
    else:
        yield request.getfixturevalue("instance")


def _through_the_facade(instance: Any, parquet: Path) -> tuple[Table[Any], dict[str, object]]:
    """Creates a table and ingests rows in each form the facade takes, then reads it back with the facade's calls."""
    table: Table[Any] = instance.create_table(f"facade-{uuid.uuid4().hex[:8]}", SCHEMA, split_points=[SPLIT_AT])
    ingested = [
        table.ingest(_rows(0, 30), direct=True),
        table.ingest(_rows(30, 40).to_batches(), direct=True),
        table.ingest([{"key": 40, "value": "v40"}, {"key": 41, "value": "v41"}], direct=True),
        table.ingest(str(parquet), direct=True),
    ]
    leaves = [p.id for p in table.leaf_partitions()]
    seen = {
        "ingested": [(r.rows_read, r.rows_written, len(r.files), len(r.references)) for r in ingested],
        "all": table.query().to_pylist(),
        "exact": table.exact(key=42).to_pylist(),
        "missing": table.exact(key=1000).to_pylist(),
        "range": table.range(45, 55).to_pylist(),
        "range_inclusive": table.range(48, 52, min_inclusive=False, max_inclusive=True).to_pylist(),
        "partitions": len(table.partitions()),
        "references_per_leaf": sorted(
            (leaves.index(r.partition_id), r.number_of_rows) for r in table.file_references()
        ),
        "files": sorted(len(f.references) for f in table.files()),
    }
    return table, seen


def should_behave_the_same_through_the_same_calls_on_a_local_and_an_aws_instance(
    instance: AwsInstance, tmp_path: Path
) -> None:
    # Given a Parquet file of rows, and an instance of each runtime
    parquet = tmp_path / "rows.parquet"
    pq.write_table(_rows(42, 100), parquet)
    local = LocalInstance.create(tmp_path / "local")

    # When the same calls create, ingest and read a table on each
    local_table, on_local = _through_the_facade(local, parquet)
    aws_table, on_aws = _through_the_facade(instance, parquet)

    # Then both see the same: what each ingest did, every query's rows, the partitions, references and files
    assert on_aws == on_local
    assert on_local["all"] == _rows(0, 100).to_pylist()
    assert on_local["exact"] == [{"key": 42, "value": "v42"}]
    assert on_local["range"] == _rows(45, 55).to_pylist()
    assert on_local["range_inclusive"] == _rows(49, 53).to_pylist()
    # And each table's files lie under its own data prefix, in its own runtime's storage
    assert local_table.data_prefix.startswith("file://")
    assert aws_table.data_prefix == f"s3a://{instance.data_bucket}/{aws_table.table_id}"
    for table in (local_table, aws_table):
        assert all(f.filename.startswith(f"{table.data_prefix}/data/") for f in table.file_references())


def should_write_ingested_files_to_the_data_bucket_under_the_table_prefix(instance: AwsInstance) -> None:
    # Given a table of an AWS instance with two leaves
    table = instance.create_table(f"facade-{uuid.uuid4().hex[:8]}", SCHEMA, split_points=[SPLIT_AT])

    # When rows are ingested through the table, directly from this process
    result = table.ingest(_rows(0, 100), direct=True)

    # Then the files written are in the data bucket under the table id, and those are the files the table references
    listed = instance.clients.s3.list_objects_v2(Bucket=instance.data_bucket, Prefix=f"{table.table_id}/data/")
    parquet_keys = {o["Key"] for o in listed.get("Contents", []) if o["Key"].endswith(".parquet")}
    referenced = {r.filename for r in table.file_references()}
    assert {f"s3a://{instance.data_bucket}/{key}" for key in parquet_keys} == referenced
    assert referenced == {f.location for f in result.files}
    assert {r.partition_id for r in table.file_references()} == {p.id for p in table.leaf_partitions()}
    assert table.query().num_rows == 100


def should_save_new_properties_through_the_table_on_either_runtime(any_instance: Any) -> None:
    # Given a table
    table: Table[Any] = any_instance.create_table(f"facade-{uuid.uuid4().hex[:8]}", SCHEMA)

    # When a property is set through the table
    updated = table.set_properties({THRESHOLD: "1234"})

    # Then the table returned and a table looked up afresh have it
    assert updated.properties.get(THRESHOLD) == "1234"
    assert any_instance.table(table.name).properties.get(THRESHOLD) == "1234"
    # And an invalid value is refused, saving nothing
    with pytest.raises(PropertyError):
        table.set_properties({THRESHOLD: "not a number"})
    assert any_instance.table(table.name).properties.get(THRESHOLD) == "1234"


@pytest.mark.parametrize("name", ["bad/name", "../escape", "", "-leading-dash", "x" * 129])
def should_refuse_an_invalid_table_name_on_either_runtime(any_instance: Any, name: str) -> None:
    # Given an instance of either runtime
    # When a table is created with a name that could not be a file or key segment
    before = {t.table_id for t in any_instance.tables()}
    with pytest.raises(SleeperError, match="invalid table name"):
        any_instance.create_table(name, SCHEMA)
    # Then nothing was created
    assert {t.table_id for t in any_instance.tables()} == before


def should_refuse_renaming_a_table_to_an_invalid_name_on_either_runtime(any_instance: Any) -> None:
    # Given a table on either runtime, and that runtime's admin
    from sleeper.runtime.aws.api import AwsApi
    from sleeper.runtime.local.api import LocalApi

    admin = LocalApi(any_instance) if isinstance(any_instance, LocalInstance) else AwsApi(any_instance)
    name = f"renamed-{uuid.uuid4().hex[:8]}"
    any_instance.create_table(name, SCHEMA)
    # When it is renamed to a name that could not be a file or key segment
    with pytest.raises(SleeperError, match="invalid table name"):
        admin.rename_table(name, "bad/name")
    # Then it keeps its name
    assert name in {t.table_name for t in any_instance.tables()}
