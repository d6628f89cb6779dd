from __future__ import annotations

import sys
from typing import Any, cast

import pytest

from sleeper.core import IMAGE_ENVIRONMENT
from sleeper.emulator.tasks import TaskRunner


def should_start_task_processes_with_the_image_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    # Given an emulator whose own process chose another Arrow pool, and settings for its tasks
    monkeypatch.setenv("ARROW_DEFAULT_MEMORY_POOL", "mimalloc")
    runner = TaskRunner(
        cast(Any, None),
        environment={"CONFIG_BUCKET": "bucket"},
        python=sys.executable,
        containers=(),
        max_running_tasks=1,
        task_log_dir=None,
    )
    # When a task process's environment is made
    environment = runner._task_environment({"TASK": "one"})
    # Then it has what every image sets, besides the emulator's settings and the task's own
    assert {key: environment[key] for key in IMAGE_ENVIRONMENT} == IMAGE_ENVIRONMENT
    assert (environment["CONFIG_BUCKET"], environment["TASK"]) == ("bucket", "one")
