"""The levels the ``sleeper.logging.*`` properties set, and the ids of the work on each text line."""

from __future__ import annotations

import io
import logging
from collections.abc import Iterator

import pytest

from sleeper.core.logcontext import log_context
from sleeper.core.properties import InstanceProperties
from sleeper.runtime.logging_config import (
    apply_logging_levels,
    configure_text_logging,
    logging_levels,
    python_level,
    running_in_lambda,
)

_LOGGERS = ("", "sleeper", "pyspark", "py4j", "pyarrow", "boto3", "botocore", "s3transfer", "urllib3")


@pytest.fixture(autouse=True)
def _restore_logging() -> Iterator[None]:
    levels = {name: logging.getLogger(name or None).level for name in _LOGGERS}
    handlers = list(logging.getLogger().handlers)
    yield
    for name, level in levels.items():
        logging.getLogger(name or None).setLevel(level)
    root = logging.getLogger()
    for handler in list(root.handlers):
        root.removeHandler(handler)
    for handler in handlers:
        root.addHandler(handler)


def should_set_each_group_of_loggers_from_its_property() -> None:
    # Given properties setting Sleeper's code to DEBUG (Log4j's name TRACE), the AWS SDK to WARN and root to ERROR
    properties = InstanceProperties(
        {
            "sleeper.logging.level": "trace",
            "sleeper.logging.aws.level": "WARN",
            "sleeper.logging.root.level": "ERROR",
            "sleeper.logging.parquet.level": "OFF",
        }
    )
    # When the levels are worked out
    levels = logging_levels(properties)
    # Then each property sets its loggers; Spark's (unset) follow the root
    assert levels[""] == logging.ERROR
    assert levels["sleeper"] == logging.DEBUG
    assert levels["boto3"] == levels["botocore"] == levels["urllib3"] == logging.WARNING
    assert levels["pyarrow"] > logging.CRITICAL
    assert "pyspark" not in levels


def should_log_at_info_when_nothing_is_set() -> None:
    # Given no logging property
    # When the levels are worked out
    levels = logging_levels(InstanceProperties())
    # Then Sleeper's code and the root log at INFO
    assert levels == {"": logging.INFO, "sleeper": logging.INFO}


def should_show_debug_lines_only_when_the_level_is_debug() -> None:
    # Given text logging to a buffer
    out = io.StringIO()
    configure_text_logging(InstanceProperties(), stream=out)
    logging.getLogger("sleeper.compaction").debug("hidden")
    # When sleeper.logging.level is DEBUG
    apply_logging_levels(InstanceProperties({"sleeper.logging.level": "DEBUG"}))
    logging.getLogger("sleeper.compaction").debug("shown")
    # Then only the line logged after shows
    assert "shown" in out.getvalue()
    assert "hidden" not in out.getvalue()


def should_put_the_ids_of_the_work_on_each_text_line() -> None:
    # Given text logging to a buffer
    out = io.StringIO()
    configure_text_logging(InstanceProperties(), stream=out)
    # When a line is logged while a job of a table runs on a task
    with log_context(task_id="task-1"), log_context(table_id="t1", job_id="job-1"):
        logging.getLogger("sleeper.ingest").info("ingesting")
    logging.getLogger("sleeper.ingest").info("after")
    # Then the line names them, and one logged after the job does not
    lines = out.getvalue().splitlines()
    assert lines[0].endswith("INFO sleeper.ingest [table_id=t1 job_id=job-1 task_id=task-1] ingesting")
    assert lines[1].endswith("INFO sleeper.ingest after")


def should_warn_of_a_level_that_names_none_and_keep_the_default(caplog: pytest.LogCaptureFixture) -> None:
    # Given a level saved before values were checked
    properties = InstanceProperties({"sleeper.logging.level": "LOUD"})
    # When the levels are worked out
    with caplog.at_level(logging.WARNING, logger="sleeper.runtime.logging_config"):
        levels = logging_levels(properties)
    # Then the loggers keep INFO and the value is reported
    assert levels["sleeper"] == logging.INFO
    assert "sleeper.logging.level: 'LOUD' names no logging level" in caplog.text


def should_refuse_a_level_that_names_none_when_set() -> None:
    # Given instance properties
    properties = InstanceProperties()
    # When a level that names none is set
    # Then it is refused, naming the levels
    with pytest.raises(Exception, match="sleeper.logging.level: invalid value 'LOUD'"):
        properties.set("sleeper.logging.level", "LOUD")
    assert python_level("warn") == logging.WARNING


def should_set_rust_backtrace_from_its_property() -> None:
    # Given sleeper.logging.backtrace
    environ: dict[str, str] = {}
    # When the levels are applied
    apply_logging_levels(InstanceProperties({"sleeper.logging.backtrace": "full"}), environ)
    # Then RUST_BACKTRACE is set for the Rust code of the process
    assert environ == {"RUST_BACKTRACE": "full"}


def should_know_a_lambda_execution_environment() -> None:
    # Given the environment of a Lambda function and of another process
    # When checked
    # Then only the first is one
    assert running_in_lambda({"AWS_LAMBDA_RUNTIME_API": "127.0.0.1:9001"})
    assert not running_in_lambda({})
