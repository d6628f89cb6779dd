"""The Lambda handlers' logs on the emulated instance: a bulk import job the pump delivers to the
bulk import starter's Lambda is logged in JSON lines carrying the table and the job; ``sleeper.logging.level=DEBUG``
saved by the admin's ``instance properties --set`` (to ``instance.properties`` in the config bucket) shows debug lines
from the next invocation on, though the emulator's functions stay warm, and none showed before."""

from __future__ import annotations

import json
import logging
import uuid
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from sleeper.api.table import Table
from sleeper.core import operations
from sleeper.core.schema import Field, PrimitiveType, Schema
from sleeper.emulator.instance import EmulatedAwsInstance
from sleeper.emulator.pump import Pump
from sleeper.runtime.aws.api import AwsApi

pytestmark = [pytest.mark.integration, pytest.mark.aws]

SCHEMA = Schema(
    row_key_fields=(Field("key", PrimitiveType.LONG),), value_fields=(Field("value", PrimitiveType.STRING),)
)
ROWS = [{"key": k, "value": f"v{k}"} for k in range(10)]


@pytest.fixture
def levels_restored() -> Iterator[None]:
    saved = {name: logging.getLogger(name).level for name in ("sleeper", "sleeper.lambdas", "")}
    yield
    for name, level in saved.items():
        logging.getLogger(name or None).setLevel(level)


def _json_lines(out: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in out.splitlines() if line.startswith('{"level"')]


def _pump(emulated: EmulatedAwsInstance) -> Pump:
    """A pump of the bulk import starter that runs no job run's driver (Spark here cannot read from the emulator)."""
    containers = [c for c in operations.CONTAINERS if c.name != operations.BULK_IMPORT_IMAGE]
    return emulated.pump(handlers=(operations.handler(operations.BULK_IMPORT_STARTER),), containers=containers)


def _start_job(emulated: EmulatedAwsInstance, pump: Pump, table: Table[Any], source: str) -> str:
    """Sends a bulk import job naming the table by id to the EMR Serverless queue; the pump delivers it."""
    job_id = str(uuid.uuid4())
    body = {"id": job_id, "tableId": table.table_id, "files": [source]}
    emulated.instance().queue(operations.BULK_IMPORT_EMR_SERVERLESS_Q).send(json.dumps(body))
    started = pump.run_until_idle(timeout_seconds=60)
    assert started.delivered.get(operations.BULK_IMPORT_STARTER) == 1 and started.failed == {}
    return job_id


def should_log_json_lines_with_the_table_and_job_and_debug_lines_once_the_level_is_saved_as_debug(
    emulated: EmulatedAwsInstance, capsys: pytest.CaptureFixture[str], levels_restored: None
) -> None:
    # Given a table, a Parquet file in the data bucket, and a pump of the bulk import starter's Lambda
    instance = emulated.instance()
    table = instance.create_table(f"logs-{uuid.uuid4().hex[:8]}", SCHEMA)
    source = f"{instance.data_bucket}/source/{uuid.uuid4()}.parquet"
    pq.write_table(pa.Table.from_pylist(ROWS), source, filesystem=instance.filesystem)
    pump = _pump(emulated)
    admin = AwsApi.for_instance_id(emulated.instance_id)
    capsys.readouterr()
    # When a bulk import job is sent and the starter's Lambda takes it, at the instance's default level
    first = _start_job(emulated, pump, table, source)
    before = _json_lines(capsys.readouterr().out)
    # And the admin saves sleeper.logging.level=DEBUG, as `sleeper instance properties --set` does, and a second job
    # is taken by the same warm function
    changes = admin.update_instance_properties({"sleeper.logging.level": "DEBUG"})
    try:
        second = _start_job(emulated, pump, table, source)
        after = _json_lines(capsys.readouterr().out)
    finally:
        admin.update_instance_properties({"sleeper.logging.level": "INFO"})
    # Then a line of the first job's invocation is JSON carrying the table and the job, and none was a debug line
    assert [(c.name, c.after) for c in changes] == [("sleeper.logging.level", "DEBUG")]
    assert any(x.get("table_id") == table.table_id and x.get("job_id") == first for x in before), before
    assert "DEBUG" not in {x["level"] for x in before}
    # And the second job's invocation logs debug lines, also carrying the table and the job
    debug = [x for x in after if x["level"] == "DEBUG"]
    assert debug, after
    assert all((x.get("table_id"), x.get("job_id")) == (table.table_id, second) for x in debug)
    # And the jobs were accepted by the starter
    for job_id in (first, second):
        status = instance.ingest_job_tracker.job(job_id)
        assert status is not None and status.table_id == table.table_id
        assert status.status.name in ("ACCEPTED", "IN_PROGRESS")


def should_log_the_function_and_request_of_each_invocation_of_a_generic_handler(
    emulated: EmulatedAwsInstance,
    capsys: pytest.CaptureFixture[str],
    levels_restored: None,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Given a table, debug lines saved on, and a pump of the garbage collector's Lambda
    monkeypatch.delenv("POWERTOOLS_SERVICE_NAME", raising=False)
    instance = emulated.instance()
    table = instance.create_table(f"logs-{uuid.uuid4().hex[:8]}", SCHEMA)
    pump = emulated.pump(handlers=(operations.handler(operations.GARBAGE_COLLECTOR),), containers=[])
    admin = AwsApi.for_instance_id(emulated.instance_id)
    admin.update_instance_properties({"sleeper.logging.level": "DEBUG"})
    for name in ("sleeper", "sleeper.lambdas"):  # as a cold start applies them (an earlier test may have left others)
        logging.getLogger(name).setLevel(logging.DEBUG)
    capsys.readouterr()
    # When the pump delivers two scheduled messages for the table, one per invocation
    try:
        runs = []
        for _ in range(2):
            instance.queue(operations.GC_JOB_Q).send(
                table.table_id, group_id=table.table_id, dedup_id=str(uuid.uuid4())
            )
            ran = pump.run_until_idle(timeout_seconds=60)
            assert ran.failed == {} and ran.delivered.get(operations.GARBAGE_COLLECTOR) == 1
            runs.append(_json_lines(capsys.readouterr().out))
    finally:
        admin.update_instance_properties({"sleeper.logging.level": "INFO"})
    # Then each invocation's lines name the function, the registry entry as the service and one request each, the
    # second invocation not a cold start (the first is one unless an earlier test invoked the function)
    first, second = runs
    assert first and second
    function = {x["function_name"] for x in first + second}
    assert len(function) == 1 and next(iter(function)).endswith(operations.GARBAGE_COLLECTOR), function
    assert {x["service"] for x in first + second} == {"garbage_collector"}
    requests = [{x["function_request_id"] for x in run} for run in runs]
    assert all(len(r) == 1 for r in requests) and requests[0] != requests[1]
    assert len({x["cold_start"] for x in first}) == 1 and {x["cold_start"] for x in second} == {False}
    assert all(x["table_id"] == table.table_id for x in first + second)
