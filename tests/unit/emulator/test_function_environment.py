"""The environment a function is invoked with in the emulator's process, and what is put back after it."""

from __future__ import annotations

import os

import pytest

from sleeper.emulator.functions import function_environment

NAME = "SLEEPER_TEST_FUNCTION_ENVIRONMENT"


def should_set_the_functions_environment_and_put_back_the_process_value(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(NAME, "process")
    with function_environment({NAME: "function"}):
        assert os.environ[NAME] == "function"
    assert os.environ[NAME] == "process"


def should_remove_a_variable_the_process_did_not_have(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(NAME, raising=False)
    with function_environment({NAME: "function"}):
        assert os.environ[NAME] == "function"
    assert NAME not in os.environ


def should_leave_a_value_another_thread_set_while_the_function_ran(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(NAME, raising=False)
    with function_environment({NAME: "function"}):
        os.environ[NAME] = "set meanwhile"  # as a test on another thread would
    assert os.environ[NAME] == "set meanwhile"


def should_not_bring_back_a_value_another_thread_removed_while_the_function_ran(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(NAME, "process")
    with function_environment({NAME: "function"}):
        del os.environ[NAME]
    assert NAME not in os.environ
