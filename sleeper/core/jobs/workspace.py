"""Where a job runs: the task recorded on its run and the directory it may spill to (docs/design.md, "The runtime
seam"). What differs between the runtimes -- an ECS task with its own id and scratch directory, a local process that
may run as a local task -- stays behind the instance's ``job_workspace()``, so the feature entries that run jobs are
the same in both."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

__all__ = ["JobWorkspace"]


@dataclass(frozen=True, slots=True)
class JobWorkspace:
    """Where a job runs.

    Attributes:
        task_id: The task running it, recorded on its run in the job tracker (None: no task).
        directory: A directory it may write scratch files to (None: the system's temporary directory).
    """

    task_id: str | None = None
    directory: str | Path | None = None
