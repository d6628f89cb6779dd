"""Which tables can be published as Iceberg views: those naming a view whose rows are exactly their files' rows."""

from __future__ import annotations

import pytest

from sleeper.core.exceptions import PropertyError
from sleeper.core.iceberg import IcebergIdentifier, parse_iceberg_name
from sleeper.core.properties import InstanceProperties, TableProperties
from sleeper.core.schema import Field, PrimitiveType, Schema
from sleeper.iceberg.catalog import catalog_properties, iceberg_path, local_catalog_path
from sleeper.iceberg.publisher import iceberg_identifier, processing_refusal
from sleeper.io.filesystem import FileSystemOptions, S3Options

SCHEMA = Schema(row_key_fields=(Field("key", PrimitiveType.LONG),), value_fields=(Field("v", PrimitiveType.LONG),))


def _properties(**values: str) -> TableProperties:
    base = {"sleeper.table.name": "t", "sleeper.table.schema": SCHEMA.to_json()}
    return TableProperties(InstanceProperties({"sleeper.id": "i"}), {**base, **values})


def should_read_the_view_a_table_names() -> None:
    assert iceberg_identifier(_properties()) is None
    assert iceberg_identifier(_properties(**{"sleeper.table.iceberg.name": "sales.orders_2"})) == IcebergIdentifier(
        "sales", "orders_2"
    )


@pytest.mark.parametrize("name", ["orders", "Sales.orders", "a.b.c", "sales.", "sales.or-ders", "x" * 129 + ".t"])
def should_refuse_an_iceberg_name_breaking_the_rule(name: str) -> None:
    # Given a name Glue or Athena could not use
    assert parse_iceberg_name(name) is None
    # When it is set on a table, then property validation refuses it naming the rule
    properties = _properties()
    with pytest.raises(PropertyError, match="namespace"):
        properties.set("sleeper.table.iceberg.name", name)
        properties.validate_all()


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("sleeper.table.iterator.class.name", "sleeper.core.iterator.AgeOffIterator"),
        ("sleeper.table.aggregations", "sum(v)"),
        ("sleeper.table.filters", "ageOff(v,1000)"),
    ],
)
def should_refuse_a_table_whose_rows_are_changed_when_read(name: str, value: str) -> None:
    reason = processing_refusal(_properties(**{name: value}))
    assert reason is not None and name in reason


def should_accept_a_table_without_processing() -> None:
    assert processing_refusal(_properties()) is None


def should_choose_a_sql_catalog_beside_a_local_instances_data() -> None:
    properties = catalog_properties("file:///srv/instance/data", None)
    assert properties == {
        "type": "sql",
        "uri": "sqlite:////srv/instance/iceberg/catalog.db",
        "warehouse": "file:///srv/instance/iceberg",
    }
    assert str(local_catalog_path("file:///srv/instance/data")) == "/srv/instance/iceberg/catalog.db"


def should_choose_glue_for_data_on_s3_with_the_instances_endpoint_and_credentials() -> None:
    options = FileSystemOptions(
        s3=S3Options(
            region="eu-west-2", endpoint_override="127.0.0.1:5000", scheme="http", access_key="k", secret_key="s"
        )
    )
    properties = catalog_properties("s3a://data-bucket", options)
    assert properties["type"] == "glue"
    for service in ("glue", "s3"):
        assert properties[f"{service}.region"] == "eu-west-2"
        assert properties[f"{service}.endpoint"] == "http://127.0.0.1:5000"
        assert properties[f"{service}.access-key-id"] == "k"
        assert properties[f"{service}.secret-access-key"] == "s"


def should_leave_real_aws_to_the_default_chain() -> None:
    properties = catalog_properties("s3a://data-bucket", FileSystemOptions(s3=S3Options(region="us-east-1")))
    assert properties == {"type": "glue", "glue.region": "us-east-1", "s3.region": "us-east-1"}


def should_name_s3_files_as_athena_reads_them() -> None:
    assert iceberg_path("s3a://b/t/data/x.parquet") == "s3://b/t/data/x.parquet"
    assert iceberg_path("file:///d/x.parquet") == "file:///d/x.parquet"
