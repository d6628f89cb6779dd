"""``spark.read.format("sleeper")`` of an instance on AWS (the emulated one): Spark, in a process of its own with only
the environment a user of the instance exports, opens ``aws:ID``, plans one Spark partition per leaf the filter can
match, and its executors read the data files from S3; the rows equal ``table.scan(filter=...)``'s."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import sleeper
from sleeper.core.schema import Field, PrimitiveType, Schema
from sleeper.emulator.instance import EmulatedAwsInstance

pytestmark = [pytest.mark.integration, pytest.mark.aws, pytest.mark.slow]

pytest.importorskip("pyspark.sql.datasource")

SCHEMA = Schema.of(
    row_keys=[Field("key", PrimitiveType.LONG)],
    values=[Field("age", PrimitiveType.INT, True), Field("name", PrimitiveType.STRING)],
)
FILTER = "key >= 150 and age < 20"

READ_SCRIPT = """
import json
import sys

import pyarrow.parquet as pq

import sleeper.spark
from sleeper.bulk_import import spark_session

location, table, row_filter, out = sys.argv[1:5]
spark = spark_session(app_name="sleeper-spark-source-emulated")
sleeper.spark.register(spark)
frame = spark.read.format("sleeper").option("instance", location).option("table", table).option("filter", row_filter)
frame = frame.load().filter("name != 'n3'")
partitions = frame.rdd.getNumPartitions()
pq.write_table(frame.toArrow(), out)
print(json.dumps({"partitions": partitions}))
spark.stop()
"""


def should_read_an_instance_on_aws_with_spark(emulated: EmulatedAwsInstance, tmp_path: Path) -> None:
    # Given a table of three leaves on the emulated instance, ingested straight to S3
    location = f"aws:{emulated.instance_id}"
    name = f"spark-{uuid.uuid4().hex[:8]}"
    table = sleeper.connect(location).create_table(name, SCHEMA, split_points=[100, 200])
    table.ingest(
        pa.table(
            {
                "key": pa.array(range(300), pa.int64()),
                "age": pa.array([None if i % 7 == 0 else i % 40 for i in range(300)], pa.int32()),
                "name": [f"n{i % 5}" for i in range(300)],
            }
        ),
        direct=True,
    )
    # When Spark reads it with a row key and value filter, and a DataFrame filter, in a process of its own
    script = tmp_path / "read.py"
    script.write_text(READ_SCRIPT)
    out = tmp_path / "rows.parquet"
    env = {**os.environ, **emulated.environment()}
    done = subprocess.run(
        [sys.executable, str(script), location, name, FILTER, str(out)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    # Then only the two leaves the filter can match are read, and the rows are the scan's
    assert json.loads(done.stdout.strip().splitlines()[-1]) == {"partitions": 2}
    got = pq.read_table(out).sort_by("key")
    expected = table.scan(filter=f"({FILTER}) and name != 'n3'").to_arrow()
    assert 0 < expected.num_rows == got.num_rows
    assert got.select(["key", "age", "name"]).to_pylist() == expected.to_pylist()
