"""The fields a Lambda function's log lines carry, as Powertools' Logger names them, and the service they name."""

from __future__ import annotations

from dataclasses import dataclass

from sleeper.runtime.logging_config import function_log_fields, service_name


@dataclass(frozen=True)
class EmulatedContext:
    """A context without ``invoked_function_arn``, as an emulator's may be."""

    function_name: str
    aws_request_id: str
    memory_limit_in_mb: int


def should_name_the_fields_of_a_context_as_powertools_logger_does() -> None:
    # Given an emulator's context, without the function's ARN
    context = EmulatedContext("sleeper-x-query", "request-1", 1024)
    # When the fields are made for a cold start
    fields = function_log_fields(context, service="query", cold_start=True)
    # Then they hold the Powertools names, and nothing for the ARN it does not have
    assert fields == {
        "service": "query",
        "cold_start": True,
        "function_name": "sleeper-x-query",
        "function_memory_size": 1024,
        "function_request_id": "request-1",
    }


def should_hold_only_the_service_without_a_context() -> None:
    assert function_log_fields(None, service="query", cold_start=None) == {"service": "query"}


def should_take_the_service_from_powertools_service_name_when_set() -> None:
    assert service_name("query", {"POWERTOOLS_SERVICE_NAME": "sleeper-query"}) == "sleeper-query"
    assert service_name("query", {"POWERTOOLS_SERVICE_NAME": ""}) == "query"
    assert service_name("query", {}) == "query"
