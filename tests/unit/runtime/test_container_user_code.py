"""Each task container installs the instance's iterator code before it takes a job, and stops without taking one
when that code cannot be installed (a task running without a table's iterator would fail every job it took)."""

from __future__ import annotations

import importlib
from types import SimpleNamespace
from typing import Any

import pytest

from sleeper.iterators.shipping import UserCodeError


@pytest.mark.parametrize("container", ["compaction", "ingest", "bulk_export"])
def should_install_user_code_before_running_the_task(container: str, monkeypatch: pytest.MonkeyPatch) -> None:
    module = importlib.import_module(f"sleeper.runtime.aws.containers.{container}")
    events: list[str] = []
    instance = SimpleNamespace(
        properties=SimpleNamespace(get_int=lambda _: 20), filesystem_options=None, config=SimpleNamespace()
    )
    monkeypatch.setattr(module, "AwsInstance", lambda config: instance)
    monkeypatch.setattr(module, "AwsRuntimeConfig", SimpleNamespace(from_environment=lambda *a: None))
    monkeypatch.setattr(module, "configure_logging", lambda *a: None)
    monkeypatch.setattr(module, "install_user_code_of", lambda i: events.append("install"))
    monkeypatch.setattr(module, "run_task", lambda *a, **k: events.append("task"))
    # When the container starts
    assert module.main() == 0
    # Then the code is installed first
    assert events == ["install", "task"]


@pytest.mark.parametrize("container", ["compaction", "ingest", "bulk_export"])
def should_take_no_job_when_user_code_cannot_be_installed(container: str, monkeypatch: pytest.MonkeyPatch) -> None:
    module = importlib.import_module(f"sleeper.runtime.aws.containers.{container}")
    ran: list[Any] = []
    instance = SimpleNamespace(properties=SimpleNamespace(get_int=lambda _: 20), filesystem_options=None)
    monkeypatch.setattr(module, "AwsInstance", lambda config: instance)
    monkeypatch.setattr(module, "AwsRuntimeConfig", SimpleNamespace(from_environment=lambda *a: None))
    monkeypatch.setattr(module, "configure_logging", lambda *a: None)

    def refuse(i: object) -> None:
        raise UserCodeError("wheel s3://jars/x.whl is not a pure-Python wheel")

    monkeypatch.setattr(module, "install_user_code_of", refuse)
    monkeypatch.setattr(module, "run_task", lambda *a, **k: ran.append(a))
    # When the container starts and the code cannot be installed, Then it stops before running the task
    with pytest.raises(UserCodeError):
        module.main()
    assert ran == []
