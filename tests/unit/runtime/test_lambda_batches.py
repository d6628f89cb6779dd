"""The handlers' batches, logs and metrics through Lambda Powertools (``sleeper.lambdas._common``): JSON log
lines with the ids of the work, the instance's logging levels, partial batch failures on standard and FIFO queues."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from typing import Any

import pytest

from sleeper.core.exceptions import TableNotFoundError
from sleeper.core.metrics import use_metrics_sink
from sleeper.core.operations import LEAF_PARTITION_QUERY_Q, QUERY_Q, STATE_STORE_COMMITTER_Q
from sleeper.core.properties import InstanceProperties
from sleeper.io.filesystem import FileSystemOptions
from sleeper.lambdas import _common


class _Instance:
    """What the handlers' plumbing needs of an instance: its properties."""

    def __init__(self, values: dict[str, str]) -> None:
        self.properties = InstanceProperties({"sleeper.id": "inst", **values})
        self.filesystem_options = FileSystemOptions()

    def reload(self) -> None:
        pass


@pytest.fixture(autouse=True)
def _plumbing() -> Iterator[None]:
    levels = {name: logging.getLogger(name).level for name in ("sleeper", "sleeper.lambdas")}
    yield
    _common.use_instance(None)
    use_metrics_sink(None)
    for name, level in levels.items():
        logging.getLogger(name).setLevel(level)


def _use(values: dict[str, str] | None = None) -> None:
    _common.use_instance(_Instance(values or {}))  # type: ignore[arg-type]


def _event(*bodies: str, group: str | None = None) -> dict[str, Any]:
    return {
        "Records": [
            {
                "messageId": f"m{i}",
                "body": body,
                "attributes": {"ApproximateReceiveCount": "1", **({"MessageGroupId": group} if group else {})},
                "eventSource": "aws:sqs",
            }
            for i, body in enumerate(bodies, start=1)
        ]
    }


def _json_lines(out: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in out.splitlines() if line.startswith('{"level"')]


def should_log_json_lines_with_the_table_and_job_of_the_message(capsys: pytest.CaptureFixture[str]) -> None:
    # Given a handler that logs while it handles a job message
    _use()

    def handle(body: str) -> None:
        logging.getLogger("sleeper.compaction.task").info("compacting")

    # When a batch of one job message is handled
    response = _common.for_each_message(_event('{"tableId": "t1", "jobId": "job-1"}'), handle)
    # Then its log line is JSON naming the table, the job and the message
    assert response == {"batchItemFailures": []}
    (line,) = [line for line in _json_lines(capsys.readouterr().out) if line["message"] == "compacting"]
    assert (line["level"], line["table_id"], line["job_id"], line["message_id"]) == ("INFO", "t1", "job-1", "m1")


def should_show_debug_lines_when_the_instance_logs_at_debug(capsys: pytest.CaptureFixture[str]) -> None:
    # Given an instance whose sleeper.logging.level is DEBUG, and one at the default level
    def handle(body: str) -> None:
        logging.getLogger("sleeper.gc").debug("looking at %s", body)

    _use({"sleeper.logging.level": "DEBUG"})
    # When each handles a scheduled message
    _common.for_each_message(_event("t1"), handle, body_is_table_id=True)
    at_debug = _json_lines(capsys.readouterr().out)
    _use()
    _common.for_each_message(_event("t1"), handle, body_is_table_id=True)
    at_info = _json_lines(capsys.readouterr().out)
    # Then only the first logs the debug line, with the table the message names
    assert [(x["level"], x["message"], x["table_id"]) for x in at_debug] == [
        ("DEBUG", "Handling message m1 (2 characters)", "t1"),
        ("DEBUG", "looking at t1", "t1"),
    ]
    assert at_info == []


def should_stop_a_fifo_batch_at_the_first_failure() -> None:
    # Given a FIFO batch whose second message fails
    _use()
    handled: list[str] = []

    def handle(body: str) -> None:
        handled.append(body)
        if body == "b":
            raise RuntimeError("store unreachable")

    # When it is handled
    response = _common.for_each_message(_event("a", "b", "c", group="t1"), handle, stop_at_failure=True)
    # Then the later message is not handled and is reported failed with it, so the group keeps its order
    assert handled == ["a", "b"]
    assert response == {"batchItemFailures": [{"itemIdentifier": "m2"}, {"itemIdentifier": "m3"}]}


def should_go_on_after_a_failure_in_a_standard_batch() -> None:
    # Given a standard batch whose second message fails and whose third names a table that is gone
    _use()
    handled: list[str] = []

    def handle(body: str) -> None:
        handled.append(body)
        if body == "b":
            raise RuntimeError("store unreachable")
        if body == "c":
            raise TableNotFoundError("no table c")

    # When it is handled
    response = _common.for_each_message(_event("a", "b", "c"), handle)
    # Then every message is handled; only the failed one returns to the queue (the gone table's is dropped)
    assert handled == ["a", "b", "c"]
    assert response == {"batchItemFailures": [{"itemIdentifier": "m2"}]}


def should_report_every_message_of_a_batch_that_all_failed() -> None:
    # Given a batch whose only message fails
    _use()

    def handle(body: str) -> None:
        raise RuntimeError("no")

    # When it is handled (Powertools would raise for a batch that all failed)
    response = _common.for_each_message(_event("a"), handle, stop_at_failure=True)
    # Then it is reported failed, as any failed message is
    assert response == {"batchItemFailures": [{"itemIdentifier": "m1"}]}
    assert _common.for_each_message({"Records": []}, handle) == {"batchItemFailures": []}


def should_publish_the_size_of_each_batch_of_commits(capsys: pytest.CaptureFixture[str]) -> None:
    # Given two unreadable commit requests on the committer's queue
    _use()
    # When the batch is routed to the committer
    _common.route_messages(_event("not json", "nor this", group="t1"), STATE_STORE_COMMITTER_Q)
    # Then an EMF line gives the batch's size in the instance's namespace
    records = [json.loads(x) for x in capsys.readouterr().out.splitlines() if x.startswith('{"_aws"')]
    (record,) = [r for r in records if "CommitBatchSize" in r]
    assert record["CommitBatchSize"] == [2.0]
    assert record["instanceId"] == "inst"
    assert record["_aws"]["CloudWatchMetrics"][0]["Namespace"] == "Sleeper"


def should_publish_how_long_each_query_message_took(capsys: pytest.CaptureFixture[str]) -> None:
    # Given a query and a sub-query message (unreadable: their handling fails fast)
    _use()
    # When each is routed to its queue's handler
    _common.route_messages(_event("not a query"), QUERY_Q)
    _common.route_messages(_event("nor a sub-query"), LEAF_PARTITION_QUERY_Q)
    # Then an EMF line gives how long each took, by queue
    records = [json.loads(x) for x in capsys.readouterr().out.splitlines() if x.startswith('{"_aws"')]
    timed = {(r["queue"], name) for r in records for name in ("QuerySeconds", "SubQuerySeconds") if name in r}
    assert timed == {(QUERY_Q, "QuerySeconds"), (LEAF_PARTITION_QUERY_Q, "SubQuerySeconds")}
