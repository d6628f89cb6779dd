"""B3 keep-alive loss (docs/reliability.md): two live runs of one compaction job.

A worker's keep-alive fails (or the job outlives SQS's 12-hour visibility limit), so its message reappears while it
still runs, and a second worker takes the same job. The two runs must never both commit, and the loser must never
overwrite, or delete, the winner's committed output. The interleaving is made deterministic: run A is checked as ready,
then (before it reads its inputs) run B runs the job to the end and commits, then run A goes on: in one case it
finishes and tries to commit; in another its read of the inputs fails (the garbage collector removed an input once
B's commit left it unreferenced past the GC delay); in the last its write fails after it started (a full disk, a
broken upload), which makes a run clean up what it wrote.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import pytest

import sleeper.compaction.execution as compaction_execution
import sleeper.compaction.task as compaction_task
from sleeper.compaction.creation import create_compaction_jobs
from sleeper.compaction.task import CompactionJobRunner
from sleeper.core.jobs.compaction import CompactionJob
from sleeper.core.trackers.compaction import CompactionJobStatusType
from sleeper.core.trackers.runs import JobOutcome
from sleeper.io.parquet import SortedFileWriter
from sleeper.runtime.local.instance import LocalInstance
from tests.integration.runtime.crash_harness import SCHEMA, rows
from tests.model.invariants import check_references, local_path, rows_of
from tests.reliability_report import Reliability

pytestmark = pytest.mark.integration


class _FailingWriter(SortedFileWriter):
    """A writer whose first batch fails, as when the disk fills or an upload breaks."""

    def write(self, batch: Any) -> None:
        super().write(batch)
        raise OSError("No space left on device (injected)")


def _digest(path: Path) -> tuple[int, str]:
    return path.stat().st_mtime_ns, hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.parametrize("loser", ["finishes", "fails-reading", "fails-writing"])
def should_never_let_the_losing_run_overwrite_or_delete_the_winners_output(
    tmp_path: Path, loser: str, monkeypatch: pytest.MonkeyPatch, reliability: Reliability
) -> None:
    # Given a table of one leaf with two files, and one compaction job over them
    instance = LocalInstance.create(tmp_path / "instance")
    table = instance.create_table("t", SCHEMA, properties={"sleeper.table.compaction.job.commit.async": "false"})
    table.ingest(rows(0, 300))
    table.ingest(rows(200, 300))
    expected = rows_of(table.query())
    (job,) = create_compaction_jobs(
        table, instance.queue("CompactionJobQ"), instance.compaction_job_tracker, compact_all=True
    ).jobs
    winner_output: dict[str, Any] = {}
    real_run = compaction_task.run_compaction

    def run_b_first(job_a: CompactionJob, *args: Any, **kwargs: Any) -> Any:
        # run A was checked ready; now run B (the message delivered again) runs the job to the end and commits
        compaction_task.run_compaction = real_run
        outcome_b = CompactionJobRunner(LocalInstance(instance.directory), task_id="worker-b").run(job)
        winner_output["outcome"] = outcome_b.outcome
        winner_output["digest"] = _digest(local_path(job.output_file))
        if loser == "fails-reading":
            local_path(job.input_files[0]).unlink()  # collected once unreferenced past the GC delay
        if loser == "fails-writing":
            monkeypatch.setattr(compaction_execution, "SortedFileWriter", _FailingWriter)  # e.g. the disk is full
        return real_run(job_a, *args, **kwargs)

    monkeypatch.setattr(compaction_task, "run_compaction", run_b_first)
    # When run A goes on after B committed
    outcome_a = CompactionJobRunner(LocalInstance(instance.directory), task_id="worker-a").run(job)
    # Then B committed, and A did not: the table's rows are unchanged, its one file B's output, intact and untouched
    after = LocalInstance(instance.directory).table("t")
    output = local_path(job.output_file)
    references = [r.filename for r in after.file_references()]
    overwritten = output.exists() and _digest(output) != winner_output["digest"]
    deleted = not output.exists()
    status = instance.compaction_job_tracker.job(job.job_id)
    committed_runs = [r for r in status.runs if r.commit_time is not None] if status is not None else []
    reliability.record(
        "B3",
        case=f"loser {loser}",
        winner=str(winner_output["outcome"].value),
        loser_outcome=str(outcome_a.outcome.value),
        runs_committed=len(committed_runs),
        winner_output_overwritten=overwritten,
        referenced_files_deleted=int(deleted),
        rows_lost=0 if not deleted else sum(expected.values()),
        unhandled_exceptions=0,
    )
    assert references == [job.output_file]
    assert not deleted, "the losing run deleted the winner's committed output"
    assert not overwritten, "the losing run overwrote the winner's committed output"
    assert len(committed_runs) == 1
    assert not list(output.parent.glob("*.staging.*")), "a run left its staging files"
    if loser == "finishes":
        assert outcome_a.outcome is JobOutcome.ALREADY_COMMITTED, outcome_a.reasons
    assert status is not None and status.status is CompactionJobStatusType.FINISHED
    state = after.state_store
    check_references(state.files_state(), state.partitions_state(), after.data_prefix)
    assert rows_of(after.query()) == expected
