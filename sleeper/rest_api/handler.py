"""The REST API's handler (Sleeper 0.36's ``RestApiLambda``): the runtime-neutral entry for API Gateway HTTP API
(payload 2.0) events, on either runtime. API Gateway authorises every route with IAM (SigV4) before this runs.

Routes (request and response JSON as Sleeper's ``java/rest-api``, plus two read-only ones):

* ``POST /sleeper/tables``: ``{"properties": {"sleeper.table.name": ..., ...}, "schema": {...}, "splitPoints": [...]}``
  creates a table (:func:`sleeper.api.table.create_table`, through the instance): 201 ``{"tableId", "tableName"}``.
  A body that is not JSON, lacks ``properties``, ``schema`` or the table name, names the table id, has an invalid
  schema, property or split point gets 400 ``invalid_request`` with the reason, and a taken name 409
  ``table_already_exists``; either way nothing is created. An iterator class
  (``sleeper.table.iterator.class.name``) must be one the instance offers: one of this port's own, or a class of the
  user code it ships (the wheels ``sleeper.userjars`` lists); any other is refused with 400 before anything is
  imported. A body nested too deeply to read is a 400 too. Split points are read as Sleeper reads a split points
  file, one value per element (row key field of a single-field key only).
* ``GET /sleeper/tables``: 200 ``{"tables": [{"tableName", "tableId", "online"}, ...]}``.
* ``GET /sleeper/tables/{name}``: 200 with the table's id, whether it is online, its partitions, leaf partitions, file
  references and rows (``rowsApproximate`` when a reference's count is an estimate); 404 ``table_not_found``.

An event whose ``requestContext`` or its ``http`` is not an object is 400 ``invalid_request``. Any other route is 404
``not_found``; an unexpected failure is 500 ``internal_error`` (logged, not shown). Errors
are ``{"error": <code>, "message": <reason>}``.
"""

from __future__ import annotations

import base64
import binascii
import importlib.util
import json
import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from sleeper.core import (
    Schema,
    SleeperError,
    TableAlreadyExistsError,
    TableNotFoundError,
    TableStatus,
    naming,
    read_split_points,
)
from sleeper.core.properties import ITERATOR_CLASS_NAME, USER_JARS
from sleeper.iterators import UserCodeError, install_user_code, resolve_class_name
from sleeper.statestore import SleeperRuntime

__all__ = ["TABLES_PATH", "handle_rest_request"]

_LOG = logging.getLogger(__name__)

TABLES_PATH = naming.REST_API_TABLES_PATH
"""The tables resource, as Sleeper's REST API names it."""
TABLE_NAME_PROPERTY = "sleeper.table.name"
TABLE_ID_PROPERTY = "sleeper.table.id"
_JSON = {"Content-Type": "application/json"}


class _BadRequest(Exception):
    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def handle_rest_request(instance: SleeperRuntime, event: Mapping[str, Any]) -> dict[str, Any]:
    """One request to the REST API (see the module docs); returns the HTTP API response."""
    if not isinstance(event, Mapping):
        return error_response(400, "invalid_request", "Not an HTTP API event: expected a JSON object")
    context = event.get("requestContext")
    http = context.get("http") if isinstance(context, Mapping) else None
    malformed = context is not None and not isinstance(context, Mapping)
    if malformed or (http is not None and not isinstance(http, Mapping)):
        return error_response(400, "invalid_request", "Not an HTTP API event: requestContext.http must be an object")
    http = http or {}
    method = str(http.get("method") or event.get("httpMethod") or "").upper()
    path = str(http.get("path") or event.get("rawPath") or "").rstrip("/") or "/"
    try:
        if path == TABLES_PATH and method == "POST":
            return _add_table(instance, event)
        if path == TABLES_PATH and method == "GET":
            return _response(200, {"tables": [_status(t) for t in instance.tables()]})
        if path.startswith(TABLES_PATH + "/") and method == "GET" and "/" not in path[len(TABLES_PATH) + 1 :]:
            return _table_status(instance, unquote(path[len(TABLES_PATH) + 1 :]))
        return error_response(404, "not_found", f"No route registered for {method} {path}")
    except Exception:
        _LOG.exception("REST API request %s %s failed", method, path)
        return error_response(500, "internal_error", "Failed to action event")


def error_response(status: int, error: str, message: str) -> dict[str, Any]:
    """An error response as Sleeper's REST API gives it: ``{"error", "message"}``."""
    return _response(status, {"error": error, "message": message})


def _response(status: int, body: object) -> dict[str, Any]:
    return {"statusCode": status, "headers": dict(_JSON), "body": json.dumps(body)}


def _status(table: TableStatus) -> dict[str, Any]:
    return {"tableName": table.table_name, "tableId": table.table_id, "online": table.online}


def _add_table(instance: SleeperRuntime, event: Mapping[str, Any]) -> dict[str, Any]:
    try:
        name, schema, split_points, properties = _read_add_table(event)
        _check_iterator_allowed(instance, properties)
        table = instance.create_table(name, schema, split_points=split_points, properties=properties)
    except _BadRequest as e:
        return error_response(400, "invalid_request", e.message)
    except TableAlreadyExistsError as e:
        return error_response(409, "table_already_exists", str(e))
    except SleeperError as e:  # a property, the name or a split point the instance refuses: nothing was created
        return error_response(400, "invalid_request", str(e))
    return _response(201, {"tableId": table.table_id, "tableName": table.name})


def _read_add_table(event: Mapping[str, Any]) -> tuple[str, Schema, list[Any], dict[str, str]]:
    body = _body(event)
    if not body.strip():
        raise _BadRequest("Request body is empty")
    try:
        request = json.loads(body)
    except ValueError:
        raise _BadRequest("Request body is not valid JSON") from None
    except RecursionError:
        raise _BadRequest("Request body is nested too deeply to be an add-table request") from None
    if not isinstance(request, dict):
        raise _BadRequest("Request body must be a JSON object with 'properties', 'schema' and optional 'splitPoints'")
    unknown = sorted(set(request) - {"properties", "schema", "splitPoints"})
    if unknown:
        raise _BadRequest(f"Unknown field(s) {', '.join(unknown)}: expected 'properties', 'schema', 'splitPoints'")
    raw_properties, raw_schema = request.get("properties"), request.get("schema")
    if raw_properties is None:
        raise _BadRequest("Request must include 'properties'")
    if raw_schema is None:
        raise _BadRequest("Request must include 'schema'")
    if not isinstance(raw_properties, dict) or not all(isinstance(v, str) for v in raw_properties.values()):
        raise _BadRequest("'properties' must be a JSON object of string values")
    properties = {str(k): v for k, v in raw_properties.items()}
    name = properties.pop(TABLE_NAME_PROPERTY, "").strip()
    if not name:
        raise _BadRequest(f"'properties' must include {TABLE_NAME_PROPERTY}")
    if TABLE_ID_PROPERTY in properties:
        raise _BadRequest(f"'properties' must not include {TABLE_ID_PROPERTY}: the instance gives the table its id")
    try:
        schema = Schema.from_dict(raw_schema)
    except (SleeperError, ValueError, TypeError, KeyError) as e:
        raise _BadRequest(f"invalid schema: {e}") from None
    except RecursionError:
        raise _BadRequest("invalid schema: nested too deeply") from None
    split_points = _split_points(request.get("splitPoints"), schema)
    return name, schema, split_points, properties


def _split_points(raw: object, schema: Schema) -> list[Any]:
    if raw is None or raw == []:
        return []
    if not isinstance(raw, list) or any(isinstance(p, dict | list) or p is None for p in raw):
        raise _BadRequest("'splitPoints' must be a JSON array of values of the row key field")
    if len(schema.row_key_fields) != 1:
        raise _BadRequest("Split points are only supported for tables with a single row key field")
    try:
        return read_split_points(schema, [str(p) for p in raw])
    except (SleeperError, ValueError) as e:
        raise _BadRequest(f"invalid split points: {e}") from None


def _check_iterator_allowed(instance: SleeperRuntime, properties: Mapping[str, str]) -> None:
    """Refuses an iterator class the instance does not offer, before anything is imported: a request may name this
    port's own iterators (``AGGREGATORS``, Sleeper's Java names of its built-in and example iterators, classes under
    ``sleeper.iterators``) or a class of the user code the instance ships (a package of the wheels
    ``sleeper.userjars`` lists, as installed for the instance's functions). Any other module installed beside the
    handler is not an iterator this instance offers, and naming it imports nothing."""
    class_name = (properties.get(ITERATOR_CLASS_NAME.name) or "").strip()
    if not class_name:
        return
    path = resolve_class_name(class_name)
    if path.startswith(_OWN_ITERATORS):
        return
    top = path.split(".", 1)[0]
    shipped = _user_code_directory(instance)
    if shipped is not None and top.isidentifier():
        spec = importlib.util.find_spec(top)  # a top-level name: found without importing anything
        origins = [spec.origin, *(spec.submodule_search_locations or [])] if spec is not None else []
        if any(origin and Path(origin).resolve().is_relative_to(shipped) for origin in origins):
            return
    raise _BadRequest(
        f"{ITERATOR_CLASS_NAME.name} {class_name!r}: not an iterator this instance offers; name one of this port's "
        f"iterators ({_OWN_ITERATORS}..., AGGREGATORS or Sleeper's Java names of them) or a class in a wheel "
        f"{USER_JARS.name} lists (see docs/usage/iterators.md)"
    )


_OWN_ITERATORS = "sleeper.iterators."


def _user_code_directory(instance: SleeperRuntime) -> Path | None:
    """Where the wheels the instance lists are installed (installing them if this process has not), or None."""
    try:
        installed = install_user_code(instance.properties, options=instance.filesystem_options)
    except UserCodeError as e:
        _LOG.warning("the instance's user code cannot be installed: %s", e)
        return None
    return installed.directory.resolve() if installed.directory is not None else None


def _body(event: Mapping[str, Any]) -> str:
    body = event.get("body")
    if body is None:
        return ""
    if event.get("isBase64Encoded"):
        try:
            return base64.b64decode(str(body), validate=True).decode("utf-8")
        except (binascii.Error, UnicodeDecodeError):
            raise _BadRequest("Request body is not valid base64 UTF-8") from None
    return str(body)


def _table_status(instance: SleeperRuntime, name: str) -> dict[str, Any]:
    try:
        table = instance.table(name)
    except TableNotFoundError as e:
        return error_response(404, "table_not_found", str(e))
    references = table.state_store.file_references()
    return _response(
        200,
        {
            "tableName": table.name,
            "tableId": table.table_id,
            "online": next((t.online for t in instance.tables() if t.table_id == table.table_id), True),
            "partitions": len(table.state_store.partitions()),
            "leafPartitions": len(table.state_store.partition_tree().leaves),
            "fileReferences": len(references),
            "files": len({r.filename for r in references}),
            "rows": sum(r.number_of_rows for r in references),
            "rowsApproximate": any(r.count_approximate for r in references),
        },
    )
