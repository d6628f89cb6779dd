"""``spark.read.format("sleeper")`` of an instance on AWS (the emulated one): Spark, in a process of its own with only
the environment a user of the instance exports, opens ``aws:ID``, plans one Spark partition per leaf the filter can
match, and its executors read the data files from S3; the rows equal ``table.scan(filter=...)``'s. A table whose
iterator comes from a wheel in the jars bucket (``sleeper.userjars``), installed nowhere in Spark's processes, is read
with its iterator applied: the executors install the wheel."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import uuid
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import sleeper
from sleeper.core.schema import Field, PrimitiveType, Schema
from sleeper.emulator.instance import EmulatedAwsInstance
from sleeper.iterators.shipping import install_wheels

pytestmark = [pytest.mark.integration, pytest.mark.aws, pytest.mark.slow]

pytest.importorskip("pyspark.sql.datasource")

SCHEMA = Schema.of(
    row_keys=[Field("key", PrimitiveType.LONG)],
    values=[Field("age", PrimitiveType.INT, True), Field("name", PrimitiveType.STRING)],
)
FILTER = "key >= 150 and age < 20"
PACKAGE = f"acme_spark_{uuid.uuid4().hex[:8]}"

READ_SCRIPT = """
import json
import sys

import pyarrow.parquet as pq

import sleeper.spark
from sleeper.bulk_import import spark_session

location, table, row_filter, shipped, out = sys.argv[1:6]
spark = spark_session(app_name="sleeper-spark-source-emulated")
sleeper.spark.register(spark)
frame = spark.read.format("sleeper").option("instance", location).option("table", table).option("filter", row_filter)
frame = frame.load().filter("name != 'n3'")
partitions = frame.rdd.getNumPartitions()
pq.write_table(frame.toArrow(), out + "/filtered.parquet")
shipped_rows = spark.read.format("sleeper").option("instance", location).load(shipped).toArrow()
pq.write_table(shipped_rows, out + "/shipped.parquet")
print(json.dumps({"partitions": partitions}))
spark.stop()
"""


def _wheel(directory: Path) -> Path:
    """A pure-Python wheel of a package holding one iterator: it keeps the rows whose name is the config's."""
    path = directory / f"{PACKAGE}-1.0-py3-none-any.whl"
    iterator = """
        import pyarrow.compute as pc

        class KeepName:
            def init(self, config, schema):
                self.name = config

            def required_value_fields(self):
                return ["name"]

            def apply(self, batches):
                for batch in batches:
                    yield batch.filter(pc.equal(batch.column("name"), self.name))
        """
    with zipfile.ZipFile(path, "w") as wheel:
        wheel.writestr(f"{PACKAGE}/__init__.py", "")
        wheel.writestr(f"{PACKAGE}/names.py", textwrap.dedent(iterator))
        wheel.writestr(f"{PACKAGE}-1.0.dist-info/METADATA", f"Metadata-Version: 2.1\nName: {PACKAGE}\nVersion: 1.0\n")
        wheel.writestr(
            f"{PACKAGE}-1.0.dist-info/WHEEL", "Wheel-Version: 1.0\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
        )
        wheel.writestr(f"{PACKAGE}-1.0.dist-info/RECORD", "")
    return path


@pytest.fixture
def isolated_imports(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """What the test adds to the import path or imports of the wheel's package is gone afterwards."""
    monkeypatch.setattr(sys, "path", list(sys.path))
    yield
    for name in [m for m in sys.modules if m == PACKAGE or m.startswith(PACKAGE + ".")]:
        del sys.modules[name]


def _ship_wheel(emulated: EmulatedAwsInstance, tmp_path: Path) -> str:
    """Uploads the wheel to the jars bucket and lists it in ``sleeper.userjars``, as a user ships iterator code;
    returns its location."""
    instance = emulated.instance()
    wheel = _wheel(tmp_path)
    bucket = instance.properties.get("sleeper.jars.bucket") or f"sleeper-{emulated.instance_id}-jars"
    if not instance.properties.get("sleeper.jars.bucket"):  # the emulator deploys no jars bucket: make it
        instance.clients.s3.create_bucket(
            Bucket=bucket, CreateBucketConfiguration={"LocationConstraint": emulated.region}
        )
    key = f"user-code/{wheel.name}"
    instance.clients.s3.put_object(Bucket=bucket, Key=key, Body=wheel.read_bytes())
    values = instance.properties_store.load_instance()
    instance.properties_store.save_instance({**values, "sleeper.jars.bucket": bucket, "sleeper.userjars": key})
    return f"s3://{bucket}/{key}"


def should_read_an_instance_on_aws_with_spark(
    emulated: EmulatedAwsInstance, tmp_path: Path, isolated_imports: None
) -> None:
    # Given a table of three leaves on the emulated instance, ingested straight to S3
    location = f"aws:{emulated.instance_id}"
    name = f"spark-{uuid.uuid4().hex[:8]}"
    rows = pa.table(
        {
            "key": pa.array(range(300), pa.int64()),
            "age": pa.array([None if i % 7 == 0 else i % 40 for i in range(300)], pa.int32()),
            "name": [f"n{i % 5}" for i in range(300)],
        }
    )
    table = sleeper.connect(location).create_table(name, SCHEMA, split_points=[100, 200])
    table.ingest(rows, direct=True)
    # And a table whose iterator is in a wheel shipped in the jars bucket (installed here only to create the table)
    shipped_wheel = _ship_wheel(emulated, tmp_path)
    install_wheels([shipped_wheel], directory=tmp_path / "user-code", options=emulated.instance().filesystem_options)
    shipped = sleeper.connect(location).create_table(
        f"shipped-{uuid.uuid4().hex[:8]}",
        SCHEMA,
        split_points=[150],
        properties={
            "sleeper.table.iterator.class.name": f"{PACKAGE}.names.KeepName",
            "sleeper.table.iterator.config": "n2",
        },
    )
    shipped.ingest(rows, direct=True)
    # When Spark reads them, in a process of its own: the first with a row key and value filter and a DataFrame filter
    script = tmp_path / "read.py"
    script.write_text(READ_SCRIPT)
    env = {**os.environ, **emulated.environment()}
    done = subprocess.run(
        [sys.executable, str(script), location, name, FILTER, shipped.name, str(tmp_path)],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    # Then only the two leaves the filter can match are read, and the rows are the scan's
    assert json.loads(done.stdout.strip().splitlines()[-1]) == {"partitions": 2}
    got = pq.read_table(tmp_path / "filtered.parquet").sort_by("key")
    expected = table.scan(filter=f"({FILTER}) and name != 'n3'").to_arrow()
    assert 0 < expected.num_rows == got.num_rows
    assert got.to_pylist() == expected.to_pylist()
    # And the shipped iterator was installed by the executors and applied: only its rows come back
    kept = pq.read_table(tmp_path / "shipped.parquet").sort_by("key")
    assert kept.to_pylist() == shipped.scan().to_arrow().to_pylist()
    assert set(kept["name"].to_pylist()) == {"n2"} and kept.num_rows == 60
