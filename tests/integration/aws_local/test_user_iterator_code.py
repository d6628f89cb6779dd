"""Iterator code shipped to the emulated AWS instance as a wheel in the jars bucket (``sleeper.userjars``): the query
functions install it at start-up and apply the query-time iterator it defines; without it the query fails, with no
rows. The wheel is built here, from a package that is not part of this project."""

from __future__ import annotations

import sys
import textwrap
import uuid
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pytest

import sleeper.lambdas._common as common
from sleeper.core.query import Query, QueryProcessingConfig, QuerySerDe
from sleeper.core.range import Region
from sleeper.core.schema import Field, PrimitiveType, Schema
from sleeper.emulator.instance import EmulatedAwsInstance
from sleeper.iterators.shipping import UserCodeError, install_wheels
from tests.integration.aws_runtime.sleeper_client import CompatClient, QueryFailed

pytestmark = [pytest.mark.integration, pytest.mark.aws]

SCHEMA = Schema.of(
    row_keys=[Field("key", PrimitiveType.LONG)], values=[Field("colour", PrimitiveType.STRING, nullable=True)]
)
PACKAGE = f"acme_filters_{uuid.uuid4().hex[:8]}"
COLOURS = ["red", "green", "blue"]


def _wheel(directory: Path, *, platform: str = "any") -> Path:
    """A wheel of a package holding one iterator: it keeps the rows whose colour is the config's."""
    path = directory / f"{PACKAGE}-1.0-py3-none-{platform}.whl"
    iterator = textwrap.dedent(
        """
        import pyarrow.compute as pc

        class KeepColour:
            def init(self, config, schema):
                self.colour = config

            def required_value_fields(self):
                return ["colour"]

            def apply(self, batches):
                for batch in batches:
                    yield batch.filter(pc.equal(batch.column("colour"), self.colour))
        """
    )
    with zipfile.ZipFile(path, "w") as wheel:
        wheel.writestr(f"{PACKAGE}/__init__.py", "")
        wheel.writestr(f"{PACKAGE}/colours.py", iterator)
        wheel.writestr(f"{PACKAGE}-1.0.dist-info/METADATA", f"Metadata-Version: 2.1\nName: {PACKAGE}\nVersion: 1.0\n")
        wheel.writestr(
            f"{PACKAGE}-1.0.dist-info/WHEEL", "Wheel-Version: 1.0\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
        )
        wheel.writestr(f"{PACKAGE}-1.0.dist-info/RECORD", "")
    return path


@pytest.fixture
def isolated_imports(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Whatever the test adds to the import path or imports of the package is gone afterwards."""
    monkeypatch.setattr(sys, "path", list(sys.path))
    yield
    for name in [m for m in sys.modules if m == PACKAGE or m.startswith(PACKAGE + ".")]:
        del sys.modules[name]
    common.use_instance(None)


@pytest.fixture(scope="module")
def emulated() -> Iterator[EmulatedAwsInstance]:
    with EmulatedAwsInstance(f"local-{uuid.uuid4().hex[:10]}", port=0) as instance:
        with pytest.MonkeyPatch.context() as env:
            for name, value in instance.environment().items():
                env.setenv(name, value)
            yield instance


def _query(
    emulated: EmulatedAwsInstance,
    table_name: str,
    client: CompatClient,
    tmp_path: Path,
    iterator: tuple[str, str] = (f"{PACKAGE}.colours.KeepColour", "green"),
) -> list[dict]:
    query_id = str(uuid.uuid4())
    query = Query(
        query_id=query_id,
        table_name=table_name,
        regions=(Region.whole(SCHEMA),),
        processing=QueryProcessingConfig(
            query_time_iterator_class_name=iterator[0], query_time_iterator_config=iterator[1]
        ),
    )
    emulated.instance().queue("QueryQueue").send(QuerySerDe.for_schema(SCHEMA).to_json(query))
    pump = emulated.pump(task_log_dir=str(tmp_path))
    return client.wait_for_results(query_id, lambda: pump.run_until_idle(timeout_seconds=60))


def should_install_a_wheel_from_the_jars_bucket_and_apply_its_iterator_in_the_query_functions(
    emulated: EmulatedAwsInstance, tmp_path: Path, isolated_imports: None
) -> None:
    # Given a table, and an iterator package that is installed nowhere
    instance = emulated.instance()
    table = instance.create_table(f"colours-{uuid.uuid4().hex[:6]}", SCHEMA, split_points=[50])
    keys = list(range(100))
    table.ingest(
        pa.table({"key": pa.array(keys, pa.int64()), "colour": pa.array([COLOURS[k % 3] for k in keys], pa.string())}),
        direct=True,
    )
    client = CompatClient(emulated.instance_id, endpoint_url=emulated.endpoint, region=emulated.region)
    common.use_instance(None)
    # When a query names its iterator before the wheel is shipped, then the query fails and no rows are published
    with pytest.raises(QueryFailed):
        _query(emulated, table.name, client, tmp_path)
    # When the wheel is uploaded to the jars bucket and listed in sleeper.userjars
    wheel = _wheel(tmp_path)
    bucket = instance.properties.get("sleeper.jars.bucket") or f"sleeper-{emulated.instance_id}-jars"
    if not instance.properties.get(
        "sleeper.jars.bucket"
    ):  # the emulator deploys no jars bucket: make it as Sleeper's deploy does
        instance.clients.s3.create_bucket(
            Bucket=bucket, CreateBucketConfiguration={"LocationConstraint": emulated.region}
        )
    key = f"user-code/{wheel.name}"
    instance.clients.s3.put_object(Bucket=bucket, Key=key, Body=wheel.read_bytes())
    values = instance.properties_store.load_instance()
    listed = {"sleeper.jars.bucket": bucket, "sleeper.userjars": f"sleeper-jars.jar,{key}"}
    instance.properties_store.save_instance({**values, **listed})
    common.use_instance(None)  # a new process of the functions: it reads the properties anew at start-up
    rows = _query(emulated, table.name, client, tmp_path)
    # Then the functions installed it at start-up and applied it: only the green rows come back
    assert sorted(r["key"] for r in rows) == [k for k in keys if COLOURS[k % 3] == "green"]


def should_refuse_a_wheel_built_for_one_platform(tmp_path: Path, isolated_imports: None) -> None:
    wheel = _wheel(tmp_path, platform="manylinux_2_17_x86_64")
    with pytest.raises(UserCodeError, match="only pure-Python wheels"):
        install_wheels([str(wheel)], directory=tmp_path / "site")


def should_refuse_a_wheel_that_writes_outside_its_directory(tmp_path: Path, isolated_imports: None) -> None:
    path = tmp_path / "evil-1.0-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as wheel:
        wheel.writestr("../escaped.py", "x = 1")
    with pytest.raises(UserCodeError, match="outside"):
        install_wheels([str(path)], directory=tmp_path / "site")
    assert not (tmp_path / "escaped.py").exists()


def should_show_each_reader_exactly_their_rows_through_the_emulated_query_queue(
    emulated: EmulatedAwsInstance, tmp_path: Path, isolated_imports: None
) -> None:
    # Given a table whose colour field is the visibility label, the empty label visible to anyone
    instance = emulated.instance()
    table = instance.create_table(f"labels-{uuid.uuid4().hex[:6]}", SCHEMA, split_points=[30])
    labels = ["red", "green", "blue", ""]
    keys = list(range(60))
    table.ingest(
        pa.table({"key": pa.array(keys, pa.int64()), "colour": pa.array([labels[k % 4] for k in keys], pa.string())}),
        direct=True,
    )
    client = CompatClient(emulated.instance_id, endpoint_url=emulated.endpoint, region=emulated.region)
    security = "sleeper.iterators.examples.SecurityFilteringIterator"
    for auths in ("red", "red,green", "blue"):
        # When a reader's query carries their authorisations in the query-time iterator config
        rows = _query(emulated, table.name, client, tmp_path, (security, f"colour,{auths}"))
        # Then the deployed functions return exactly the rows labelled with one of them, or unlabelled
        allowed = {"", *auths.split(",")}
        assert sorted(r["key"] for r in rows) == [k for k in keys if labels[k % 4] in allowed]
