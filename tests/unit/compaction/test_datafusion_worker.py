"""The DataFusion engine's worker processes: a worker whose output cannot be read fails the merge, whatever its exit
status, so a cut stream never passes for fewer rows."""

from __future__ import annotations

import pytest

from sleeper.compaction import datafusion_engine
from sleeper.core.schema import Field, PrimitiveType, Schema

SCHEMA = Schema.of(row_keys=[Field("key", PrimitiveType.LONG)], values=[Field("value", PrimitiveType.LONG)])


def _task() -> object:
    return datafusion_engine._Task(("/nowhere/file.parquet",), SCHEMA, None, 1000, None)


@pytest.mark.parametrize(
    ("program", "message"),
    [
        ("import sys; sys.stdout.buffer.write(b'not an arrow stream'); sys.exit(0)", "output could not be read"),
        ("import sys; sys.stderr.write('ValueError: broken\\n'); sys.exit(3)", "worker failed: ValueError: broken"),
    ],
)
def should_fail_the_merge_when_a_worker_output_cannot_be_read_or_it_fails(
    monkeypatch: pytest.MonkeyPatch, program: str, message: str
) -> None:
    # Given a worker that writes no Arrow stream, exiting cleanly or not
    monkeypatch.setattr(datafusion_engine, "_WORKER_START", program)
    # When its batches are read
    # Then the merge fails, naming why, with no rows taken for the whole output
    with pytest.raises(RuntimeError, match=message):
        list(datafusion_engine._run_worker(_task()))  # type: ignore[arg-type]
