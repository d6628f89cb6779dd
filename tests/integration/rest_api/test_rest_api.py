"""The REST API's handler (Sleeper's RestApiLambda) on a local instance: the add-table request of Sleeper's
REST API creates the table (201 with its id and name) that the instance lists; a bad request gets 400 with the
reason and creates nothing, a taken name 409; the read-only routes list the tables and give a table's status."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from sleeper.rest_api.handler import handle_rest_request
from sleeper.runtime.local.instance import LocalInstance

pytestmark = pytest.mark.integration

SCHEMA = {
    "rowKeyFields": [{"name": "key", "type": "LongType"}],
    "sortKeyFields": [],
    "valueFields": [{"name": "value", "type": "StringType"}],
}


@pytest.fixture
def instance(tmp_path: Path) -> LocalInstance:
    return LocalInstance.create(tmp_path / "instance")


def _request(method: str, path: str, body: object = None, *, raw: str | None = None) -> dict[str, Any]:
    event: dict[str, Any] = {
        "version": "2.0",
        "routeKey": f"{method} {path}",
        "rawPath": path,
        "requestContext": {"http": {"method": method, "path": path}},
        "isBase64Encoded": False,
    }
    if raw is not None:
        event["body"] = raw
    elif body is not None:
        event["body"] = json.dumps(body)
    return event


def _add(name: str, **extra: Any) -> dict[str, Any]:
    return {"properties": {"sleeper.table.name": name}, "schema": SCHEMA, **extra}


def _body(response: dict[str, Any]) -> Any:
    return json.loads(response["body"])


def should_create_a_table_the_instance_lists(instance: LocalInstance) -> None:
    # When Sleeper's add-table request is posted, with properties and split points
    request = _add("orders", splitPoints=[100, 200])
    request["properties"]["sleeper.table.parquet.compression.codec"] = "snappy"
    response = handle_rest_request(instance, _request("POST", "/sleeper/tables", request))
    # Then the table is created with them, and the response names it as Sleeper's does
    assert response["statusCode"] == 201 and response["headers"]["Content-Type"] == "application/json"
    created = _body(response)
    assert created["tableName"] == "orders"
    assert [(t.table_name, t.table_id) for t in instance.tables()] == [("orders", created["tableId"])]
    table = instance.table("orders")
    assert len(table.leaf_partitions()) == 3
    assert table.schema.row_key_names == ("key",)
    assert table.properties.get("sleeper.table.parquet.compression.codec") == "snappy"


def should_accept_a_base64_body(instance: LocalInstance) -> None:
    body = base64.b64encode(json.dumps(_add("b64")).encode()).decode()
    event = _request("POST", "/sleeper/tables", raw=body) | {"isBase64Encoded": True}
    assert handle_rest_request(instance, event)["statusCode"] == 201
    assert [t.table_name for t in instance.tables()] == ["b64"]


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        ("", "Request body is empty"),
        ("{not json", "Request body is not valid JSON"),
        (json.dumps({"schema": SCHEMA}), "Request must include 'properties'"),
        (json.dumps({"properties": {"sleeper.table.name": "t"}}), "Request must include 'schema'"),
        (json.dumps({"properties": {}, "schema": SCHEMA}), "must include sleeper.table.name"),
        (json.dumps(_add("t") | {"extra": 1}), "Unknown field(s) extra"),
        (json.dumps(_add("t", splitPoints=["not-a-long"])), "invalid split points"),
        (json.dumps(_add("t", splitPoints=[5, 1])), ""),
        (json.dumps({"properties": {"sleeper.table.name": "t"}, "schema": {"rowKeyFields": []}}), "invalid schema"),
        (json.dumps({"properties": {"sleeper.table.name": "t", "sleeper.table.id": "x"}, "schema": SCHEMA}), "id"),
        (json.dumps(_add("bad name!")), ""),
        (
            json.dumps(
                {
                    "properties": {"sleeper.table.name": "t", "sleeper.table.fs.s3a.readahead.range": "x"},
                    "schema": SCHEMA,
                }
            ),
            "",
        ),
    ],
)
def should_refuse_a_bad_request_and_create_nothing(instance: LocalInstance, body: str, reason: str) -> None:
    # When a bad add-table request is posted
    response = handle_rest_request(instance, _request("POST", "/sleeper/tables", raw=body))
    # Then it is refused with 400 and the reason, and no table exists
    assert response["statusCode"] == 400, response
    refused = _body(response)
    assert refused["error"] == "invalid_request" and reason in refused["message"] and refused["message"]
    assert instance.tables() == []


def should_refuse_a_taken_name_with_409(instance: LocalInstance) -> None:
    assert handle_rest_request(instance, _request("POST", "/sleeper/tables", _add("t")))["statusCode"] == 201
    again = handle_rest_request(instance, _request("POST", "/sleeper/tables", _add("t")))
    assert again["statusCode"] == 409 and _body(again)["error"] == "table_already_exists"
    assert len(instance.tables()) == 1


def should_list_the_tables_and_give_a_tables_status(instance: LocalInstance) -> None:
    # Given a table of two leaves holding 10 rows
    table = instance.create_table("t", _schema(), split_points=[5])
    table.ingest(pa.table({"key": pa.array(range(10), pa.int64()), "value": ["v"] * 10}))
    # When the tables and the table's status are asked for
    listed = handle_rest_request(instance, _request("GET", "/sleeper/tables"))
    status = handle_rest_request(instance, _request("GET", "/sleeper/tables/t"))
    # Then they describe it
    assert _body(listed) == {"tables": [{"tableName": "t", "tableId": table.table_id, "online": True}]}
    assert _body(status) | {"files": 0} == {
        "tableName": "t",
        "tableId": table.table_id,
        "online": True,
        "partitions": 3,
        "leafPartitions": 2,
        "fileReferences": 2,
        "files": 0,
        "rows": 10,
        "rowsApproximate": False,
    }
    missing = handle_rest_request(instance, _request("GET", "/sleeper/tables/nope"))
    assert missing["statusCode"] == 404 and _body(missing)["error"] == "table_not_found"


def should_answer_404_for_a_route_it_does_not_have(instance: LocalInstance) -> None:
    for method, path in (("DELETE", "/sleeper/tables"), ("GET", "/other"), ("GET", "/sleeper/tables/a/b")):
        response = handle_rest_request(instance, _request(method, path))
        assert response["statusCode"] == 404 and _body(response)["error"] == "not_found"


def _schema() -> Any:
    from sleeper.core.schema import Schema

    return Schema.from_dict(SCHEMA)


def should_route_requests_through_the_lambda_handler(instance: LocalInstance) -> None:
    # Given the Lambda handler the registry names for the REST API, on the instance
    from sleeper.core import operations
    from sleeper.lambdas import _common
    from sleeper.lambdas.rest_api import handler

    assert operations.handler(operations.REST_API).handler == "sleeper.lambdas.rest_api:handler"
    _common.use_instance(instance)  # type: ignore[arg-type]
    try:
        # When API Gateway invokes it with an add-table request
        response = handler(_request("POST", "/sleeper/tables", _add("via-lambda")))
    finally:
        _common.use_instance(None)
    # Then the table is created
    assert response["statusCode"] == 201
    assert [t.table_name for t in instance.tables()] == ["via-lambda"]


@pytest.mark.parametrize(
    "context", ["a string", ["a", "list"], 7, {"http": "not an object"}, {"http": ["GET", "/sleeper/tables"]}]
)
def should_answer_400_to_an_event_whose_request_context_is_not_an_object(instance: LocalInstance, context: Any) -> None:
    from sleeper.lambdas import _common
    from sleeper.lambdas.rest_api import handler

    event = _request("GET", "/sleeper/tables") | {"requestContext": context}
    response = handle_rest_request(instance, event)
    assert response["statusCode"] == 400 and _body(response)["error"] == "invalid_request"
    assert "requestContext" in _body(response)["message"]
    _common.use_instance(instance)  # type: ignore[arg-type]
    try:
        assert handler(event)["statusCode"] == 400
    finally:
        _common.use_instance(None)


@pytest.mark.parametrize("depth", [10_000, 200_000])
def should_answer_400_to_a_body_nested_too_deeply(instance: LocalInstance, depth: int) -> None:
    nested = '{"properties": {"sleeper.table.name": "t"}, "schema": ' + "[" * depth + "]" * depth + "}"
    response = handle_rest_request(instance, _request("POST", "/sleeper/tables", raw=nested))
    assert response["statusCode"] == 400 and "nested too deeply" in _body(response)["message"]
    assert instance.tables() == []


@pytest.fixture
def installed_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A module installed beside the handler that records being imported (in a file, as its only effect)."""
    name = f"not_an_offered_iterator_{tmp_path.name.replace('-', '_')}"
    marker = tmp_path / "imported"
    (tmp_path / "site").mkdir()
    (tmp_path / "site" / f"{name}.py").write_text(
        f"import pathlib\npathlib.Path({str(marker)!r}).write_text('yes')\n\n\nclass Iterator:\n    pass\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    return name


def should_refuse_an_iterator_class_the_instance_does_not_offer_without_importing_it(
    instance: LocalInstance, installed_module: str, tmp_path: Path
) -> None:
    import sys

    # When a table is asked for with an iterator from a module installed beside the handler, not offered by the instance
    request = _add("t")
    request["properties"]["sleeper.table.iterator.class.name"] = f"{installed_module}.Iterator"
    response = handle_rest_request(instance, _request("POST", "/sleeper/tables", request))
    # Then it is refused with 400 naming the class, the module was never imported, and no table exists
    assert response["statusCode"] == 400, response
    assert f"{installed_module}.Iterator" in _body(response)["message"]
    assert "not an iterator this instance offers" in _body(response)["message"]
    assert installed_module not in sys.modules and not (tmp_path / "imported").exists()
    assert instance.tables() == []


def should_accept_this_ports_own_iterators_and_the_user_code_the_instance_ships(
    instance: LocalInstance, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from sleeper.rest_api import handler as rest_handler

    # Given user code the instance ships: a package in the directory its wheels are installed in
    shipped = tmp_path / "user-code"
    (shipped / "shipped_iterators").mkdir(parents=True)
    (shipped / "shipped_iterators" / "__init__.py").write_text(
        "class PassThrough:\n"
        "    def init(self, config, schema):\n        pass\n\n"
        "    def required_value_fields(self):\n        return []\n\n"
        "    def apply(self, batches):\n        return batches\n"
    )
    monkeypatch.syspath_prepend(str(shipped))
    monkeypatch.setattr(rest_handler, "_user_code_directory", lambda _instance: shipped.resolve())
    # When tables are asked for with one of this port's iterators, one by Sleeper's Java name, and the shipped one
    for name, class_name, config in [
        ("own", "sleeper.iterators.examples.SecurityFilteringIterator", "value"),
        ("java", "sleeper.example.iterator.SecurityFilteringIterator", "value"),
        ("shipped", "shipped_iterators.PassThrough", ""),
    ]:
        request = _add(name)
        request["properties"] |= {
            "sleeper.table.iterator.class.name": class_name,
            "sleeper.table.iterator.config": config,
        }
        response = handle_rest_request(instance, _request("POST", "/sleeper/tables", request))
        # Then each is created
        assert response["statusCode"] == 201, response
    assert sorted(t.table_name for t in instance.tables()) == ["java", "own", "shipped"]
