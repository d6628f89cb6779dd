"""A compaction whose iterator cannot load (its code gone after the job was created) on a local instance: the run is
tracked failed with the cause, ``sleeper compact`` exits 1 naming the job and the cause, the job is retried and then
dead-lettered as in Sleeper with its input files still assigned to it, and ``sleeper compact`` sends it again from the
dead-letter queue, so once the code is back the files are compacted: nothing is stranded silently."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pytest

import sleeper
from sleeper.api.table import Table
from sleeper.cli.main import run
from sleeper.core.trackers.compaction import CompactionJobStatusType
from sleeper.runtime.local.instance import LocalInstance

pytestmark = pytest.mark.integration

SCHEMA = sleeper.Schema.of(
    row_keys=[sleeper.Field("key", sleeper.PrimitiveType.LONG)],
    values=[sleeper.Field("value", sleeper.PrimitiveType.LONG)],
)
ITERATOR_CODE = """
class PassThrough:
    def init(self, config, schema):
        pass

    def required_value_fields(self):
        return []

    def apply(self, batches):
        return batches
"""


class _IteratorCode:
    """An importable iterator module that can be removed and put back."""

    def __init__(self, directory: Path, module: str) -> None:
        self.path = directory / f"{module}.py"
        self.module = module
        self.class_name = f"{module}.PassThrough"

    def install(self) -> None:
        self.path.write_text(ITERATOR_CODE)
        importlib.invalidate_caches()

    def remove(self) -> None:
        self.path.unlink()
        sys.modules.pop(self.module, None)
        importlib.invalidate_caches()


@pytest.fixture
def code(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[_IteratorCode]:
    (tmp_path / "code").mkdir()
    monkeypatch.syspath_prepend(str(tmp_path / "code"))
    code = _IteratorCode(tmp_path / "code", f"passthrough_{tmp_path.name.replace('-', '_')}")
    code.install()
    yield code
    sys.modules.pop(code.module, None)


@pytest.fixture
def instance(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> LocalInstance:
    monkeypatch.setenv("SLEEPER_INSTANCE", str(tmp_path / "instance"))
    return LocalInstance.create(tmp_path / "instance")


def _table_with_a_created_job(instance: LocalInstance, code: _IteratorCode) -> tuple[Table[LocalInstance], str]:
    """A table of three files using the iterator, and a compaction job over them created (not run), after which the
    iterator's code is removed."""
    properties = {
        "sleeper.table.iterator.class.name": code.class_name,
        "sleeper.table.compaction.job.id.assignment.commit.async": "false",  # assigned and sent at creation
    }
    table = instance.create_table("t", SCHEMA, properties=properties)
    for start in (0, 10, 20):
        keys = pa.array(range(start, start + 10), pa.int64())
        table.ingest(pa.table({"key": keys, "value": keys}))
    assert run(["compact", "t", "--all", "--no-wait"]) == 0
    (job_id,) = {r.job_id for r in table.file_references()}
    assert job_id is not None
    code.remove()
    return table, job_id


def should_fail_the_compact_command_naming_the_job_and_the_cause_and_keep_the_job(
    instance: LocalInstance, code: _IteratorCode, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given a job whose iterator can no longer be imported
    table, job_id = _table_with_a_created_job(instance, code)

    # When the compact command runs it
    capsys.readouterr()
    exit_code = run(["compact", "t", "--all"])

    # Then it exits 1 with an error line naming the job, the cause and what to do
    err = capsys.readouterr().err
    assert exit_code == 1
    assert err.startswith("error: ")
    assert f"compaction job {job_id} failed" in err and f"cannot import module {code.module!r}" in err
    assert "dead-letter queue" in err and "sleeper compact t" in err
    # And the failure is in the tracker, the job's message was not dropped, and its inputs are still its own
    status = instance.compaction_job_tracker.job(job_id)
    assert status is not None and status.status is CompactionJobStatusType.FAILED
    assert status.latest_run is not None and "cannot import module" in status.latest_run.failure_reasons[0]
    counts = instance.queue("CompactionJobQ").approximate_counts()
    assert counts.visible + counts.in_flight == 1
    assert {r.job_id for r in table.file_references()} == {job_id}


def should_retry_then_dead_letter_the_job_and_run_it_again_from_compact_once_mended(
    instance: LocalInstance, code: _IteratorCode, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given a job whose iterator can no longer be imported
    table, job_id = _table_with_a_created_job(instance, code)

    # When the local runtime runs until idle
    assert run(["run", "--until-idle"]) == 0

    # Then the job failed on each of its receives (sleeper.compaction.job.max.retries, 3) and was dead-lettered, each
    # failure tracked with the cause, and its input files are still assigned to it
    status = instance.compaction_job_tracker.job(job_id)
    assert status is not None
    assert [r.status for r in status.runs] == [CompactionJobStatusType.FAILED] * 3
    assert all("cannot import module" in r.failure_reasons[0] for r in status.runs)
    assert instance.queue("CompactionJobQ").approximate_counts() == (0, 0)
    assert instance.dead_letter_queue("CompactionJobQ").approximate_counts().visible == 1
    assert {r.job_id for r in table.file_references()} == {job_id}

    # When the iterator's code is back and the compact command runs
    code.install()
    capsys.readouterr()
    assert run(["compact", "t"]) == 0

    # Then the dead-lettered job was sent again and compacted the files into one
    assert "1 dead-lettered compaction job sent again" in capsys.readouterr().out
    assert instance.dead_letter_queue("CompactionJobQ").approximate_counts().visible == 0
    (reference,) = table.file_references()
    assert reference.job_id is None and reference.number_of_rows == 30
    status = instance.compaction_job_tracker.job(job_id)
    assert status is not None and status.status is CompactionJobStatusType.FINISHED
