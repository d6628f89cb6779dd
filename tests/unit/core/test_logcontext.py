"""The ids of the work on log records."""

from __future__ import annotations

import logging

import pytest

from sleeper.core.logcontext import LogContextFilter, current_log_context, fields_of_message, log_context


def should_nest_and_restore_the_ids() -> None:
    # Given a task's context
    with log_context(task_id="t"):
        # When a job of a table runs in it
        with log_context(job_id="j", table_id="tb", run_id=None):
            inner = dict(current_log_context())
        outer = dict(current_log_context())
    # Then the job's ids are added while it runs, an id given as None is left out, and all go afterwards
    assert inner == {"task_id": "t", "job_id": "j", "table_id": "tb"}
    assert outer == {"task_id": "t"}
    assert dict(current_log_context()) == {}


def should_refuse_an_unknown_id() -> None:
    # Given a name that is not one of the ids
    # When it is given
    # Then it is refused
    with pytest.raises(ValueError, match="unknown log context fields: user"):
        with log_context(user="x"):
            pass


def should_copy_the_ids_onto_each_record() -> None:
    # Given a record made while a job runs
    record = logging.LogRecord("sleeper", logging.INFO, "f", 1, "m", None, None)
    # When it passes the filter
    with log_context(job_id="j"):
        passed = LogContextFilter().filter(record)
    # Then it carries the id
    assert passed and record.__dict__["job_id"] == "j"


def should_read_the_ids_a_message_names() -> None:
    # Given job, query and scheduled messages, and one that is not JSON
    # When their ids are read
    # Then a job's table and id, a query's id and a scheduled message's table are found, and nothing else is
    assert fields_of_message('{"tableId": "t1", "id": "job-1", "files": []}') == {"table_id": "t1", "job_id": "job-1"}
    assert fields_of_message('{"queryId": "q", "tableName": "n"}') == {"query_id": "q"}
    assert fields_of_message("t1", body_is_table_id=True) == {"table_id": "t1"}
    assert fields_of_message("t1") == {}
    assert fields_of_message("{not json") == {}
    assert fields_of_message("[1]") == {}
    request = '{"tableId": "t1", "request": {"jobId": "j", "taskId": "k", "jobRunId": "r"}}'
    assert fields_of_message(request) == {"table_id": "t1", "job_id": "j", "task_id": "k", "run_id": "r"}
