"""The emulated instance's REST API: ``sleeper.rest.api.url`` names it; a request signed with SigV4 by the
emulator's credentials reaches the registry's ``rest_api`` handler, run as Lambda would run it, so Sleeper's add-table
request creates a table the instance lists (as ``table list`` shows it); a bad request gets 400 with the reason and
creates nothing; an unsigned or wrongly signed request is refused with 403 before anything runs."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
import uuid
from typing import Any

import pytest
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

from sleeper.cli.main import run
from sleeper.core.properties import instance_cdk as cdkp
from sleeper.emulator.instance import EmulatedAwsInstance
from sleeper.runtime.aws.instance import ACCOUNT_ENV, CONFIG_BUCKET_ENV, INSTANCE_ID_ENV

pytestmark = [pytest.mark.integration, pytest.mark.aws]

SCHEMA = {"rowKeyFields": [{"name": "key", "type": "StringType"}], "valueFields": [{"name": "v", "type": "IntType"}]}


def _call(
    emulated: EmulatedAwsInstance, method: str, path: str, body: object = None, *, sign: str | None = "testing"
) -> tuple[int, Any]:
    url = f"{emulated.instance().properties.get(cdkp.REST_API_URL.name)}{path}"
    data = json.dumps(body).encode() if body is not None else None
    request = AWSRequest(method=method, url=url, data=data, headers={"Content-Type": "application/json"})
    if sign is not None:
        SigV4Auth(Credentials("testing", sign), "execute-api", emulated.region).add_auth(request)
    prepared = urllib.request.Request(url, data=data, method=method, headers=dict(request.headers.items()))
    try:
        with urllib.request.urlopen(prepared, timeout=30) as response:
            return response.status, json.loads(response.read() or b"null")
    except urllib.error.HTTPError as e:
        with e:
            return e.code, json.loads(e.read() or b"null")


def _names(emulated: EmulatedAwsInstance) -> set[str]:
    return {t.table_name for t in emulated.instance().tables()}


def should_name_the_api_in_the_instance_properties(emulated: EmulatedAwsInstance) -> None:
    url = emulated.instance().properties.get(cdkp.REST_API_URL.name)
    assert url == emulated.rest_api_url and url.startswith("http://127.0.0.1:")


def should_create_a_table_that_the_instance_lists(emulated: EmulatedAwsInstance) -> None:
    # When Sleeper's add-table request is posted, signed
    name = f"rest-{uuid.uuid4().hex[:8]}"
    body = {"properties": {"sleeper.table.name": name}, "schema": SCHEMA, "splitPoints": ["m"]}
    status, created = _call(emulated, "POST", "/sleeper/tables", body)
    # Then the table exists, listed as table list lists it, and the read-only routes describe it
    assert status == 201 and created["tableName"] == name
    assert name in _names(emulated)
    status, listed = _call(emulated, "GET", "/sleeper/tables")
    assert status == 200 and {"tableName": name, "tableId": created["tableId"], "online": True} in listed["tables"]
    status, table = _call(emulated, "GET", f"/sleeper/tables/{name}")
    assert status == 200 and (table["leafPartitions"], table["rows"]) == (2, 0)


def should_create_a_table_that_the_cli_table_list_shows(
    emulated: EmulatedAwsInstance, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given the CLI pointed at the emulated instance by its id alone, as a user's shell after 'sleeper aws-local up'
    for name in (CONFIG_BUCKET_ENV, INSTANCE_ID_ENV, ACCOUNT_ENV, "SLEEPER_INSTANCE"):
        monkeypatch.delenv(name, raising=False)
    argv = ["--instance", f"aws:{emulated.instance_id}", "table", "list", "--json"]
    capsys.readouterr()
    assert run(argv) == 0
    before = {t["tableName"] for t in json.loads(capsys.readouterr().out)}
    # When a table is added through the REST API
    name = f"rest-cli-{uuid.uuid4().hex[:8]}"
    body = {"properties": {"sleeper.table.name": name}, "schema": SCHEMA, "splitPoints": ["g", "t"]}
    status, created = _call(emulated, "POST", "/sleeper/tables", body)
    assert status == 201
    # Then 'sleeper table list' shows it, online and empty, with the id the API returned, beside the tables before
    capsys.readouterr()  # the handler's log lines, written to this process's stdout as Lambda writes them
    assert run(argv) == 0
    listed = {t["tableName"]: t for t in json.loads(capsys.readouterr().out)}
    assert name not in before and set(listed) == before | {name}
    assert {"tableName": name, "online": True, "rows": 0}.items() <= listed[name].items()
    assert listed[name]["tableId"] == created["tableId"]


def should_refuse_a_bad_request_with_its_reason_and_create_nothing(emulated: EmulatedAwsInstance) -> None:
    before = _names(emulated)
    status, refused = _call(emulated, "POST", "/sleeper/tables", {"properties": {"sleeper.table.name": "x"}})
    assert (status, refused["error"], refused["message"]) == (400, "invalid_request", "Request must include 'schema'")
    assert _names(emulated) == before


@pytest.mark.parametrize("sign", [None, "wrong-secret"])
def should_refuse_a_request_not_signed_by_the_emulators_credentials(
    emulated: EmulatedAwsInstance, sign: str | None
) -> None:
    before = _names(emulated)
    name = f"unsigned-{uuid.uuid4().hex[:8]}"
    body = {"properties": {"sleeper.table.name": name}, "schema": SCHEMA}
    status, refused = _call(emulated, "POST", "/sleeper/tables", body, sign=sign)
    assert status == 403 and refused["message"]
    assert _names(emulated) == before
