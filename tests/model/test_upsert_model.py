"""Model-based test of upsert tables (``sleeper.table.upsert``, docs/usage/upserts.md): random sequences of upserts,
ingests, row deletes, compactions, splits, purges and time-travel reads on a real local table, checked after every step
against a plain dict of the last written row of each key.

Two kinds of table: without a sort key (the last committed row wins: ``Table.upsert`` and ``Table.ingest`` commit
UPSERT_FILES with a pending delete of the older rows of their keys) and with one (the greatest sort key wins, whatever
the commit order: each written row is given a random, distinct version). Invariant U1, after every step: a full scan
and a queued scan return exactly one row per key, the last written: 0 lost (a key missing), 0 resurrected (an older
value of a key, or a deleted key, returned) and 0 duplicated (a key twice). A time-travel read as of an earlier
upsert returns the model as it was then, while the table still holds that history.

Runs: ``SLEEPER_MODEL_EXAMPLES`` (default 10 here) and ``SLEEPER_MODEL_STEPS`` (default 15) set the size.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule, run_state_machine_as_test

import sleeper
from sleeper.core.schema import Field, PrimitiveType, Schema

pytestmark = pytest.mark.integration

EXAMPLES = int(os.environ.get("SLEEPER_MODEL_EXAMPLES", "10"))
STEPS = int(os.environ.get("SLEEPER_MODEL_STEPS", "15"))
BY_COMMIT = Schema.of(row_keys=[Field("key", PrimitiveType.LONG)], values=[Field("value", PrimitiveType.LONG)])
BY_SORT_KEY = Schema.of(
    row_keys=[Field("key", PrimitiveType.LONG)],
    sort_keys=[Field("version", PrimitiveType.LONG)],
    values=[Field("value", PrimitiveType.LONG)],
)
KEYS = st.integers(-30, 30)
WRITES = st.lists(st.tuples(KEYS, st.integers(-5, 5)), min_size=1, max_size=40)

Model = dict[int, tuple[int, int]]
"""Key to (version, value): the last written row of each key (version 0 without a sort key)."""


class UpsertMachine(RuleBasedStateMachine):
    """One upsert table of a local instance against the last written row of each key."""

    def __init__(self) -> None:
        super().__init__()
        self.directory = Path(tempfile.mkdtemp(prefix="sleeper-upsert-model-"))
        self.model: Model = {}
        self.written: set[tuple[int, int, int]] = set()
        self.versions: set[int] = set()
        self.past: list[tuple[int, Model]] = []
        self.ready = False

    @initialize(sorted_by_version=st.booleans(), split_point=st.none() | KEYS)
    def create_table(self, sorted_by_version: bool, split_point: int | None) -> None:
        self.sorted = sorted_by_version
        self.instance = sleeper.create_instance(self.directory / "instance")
        self.table = self.instance.create_table(
            "t",
            BY_SORT_KEY if self.sorted else BY_COMMIT,
            split_points=None if split_point is None else [split_point],
            properties={"sleeper.table.upsert": "true", "sleeper.table.gc.delay.minutes": "60"},
        )
        self.ready = True

    def teardown(self) -> None:
        shutil.rmtree(self.directory, ignore_errors=True)

    def _rows(self, writes: list[tuple[int, int]], versions: list[int]) -> pa.Table:
        columns = {"key": pa.array([k for k, _ in writes], pa.int64())}
        if self.sorted:
            columns["version"] = pa.array(versions, pa.int64())
        columns["value"] = pa.array([v for _, v in writes], pa.int64())
        return pa.table(columns)

    def _write(self, writes: list[tuple[int, int]], data: st.DataObject, explicit: bool) -> None:
        versions = [0] * len(writes)
        if self.sorted:
            free = st.integers(1, 10_000).filter(lambda v: v not in self.versions)
            versions = data.draw(st.lists(free, min_size=len(writes), max_size=len(writes), unique=True))
            self.versions.update(versions)
        rows = self._rows(writes, versions)
        if explicit:
            numbers = self.table.upsert(rows)
        else:
            self.table.ingest(rows)
            numbers = []
        for (key, value), version in zip(writes, versions, strict=True):
            current = self.model.get(key)
            if not self.sorted or current is None or version > current[0]:
                self.model[key] = (version, value)
            self.written.add((key, version, value))
        if numbers and not self.sorted:
            self.past.append((numbers[-1], dict(self.model)))

    @rule(writes=WRITES, data=st.data())
    def upsert(self, writes: list[tuple[int, int]], data: st.DataObject) -> None:
        self._write(writes, data, explicit=True)

    @rule(writes=WRITES, data=st.data())
    def ingest(self, writes: list[tuple[int, int]], data: st.DataObject) -> None:
        self._write(writes, data, explicit=False)

    @rule(bounds=st.tuples(KEYS, KEYS))
    def delete_rows(self, bounds: tuple[int, int]) -> None:
        low, high = sorted(bounds)
        self.table.delete(f"key >= {low} and key < {high}")
        self.model = {k: v for k, v in self.model.items() if not low <= k < high}

    @rule(compact_all=st.booleans())
    def compact(self, compact_all: bool) -> None:
        self.instance.compact_now(self.table.name, compact_all=compact_all)

    @rule()
    def split(self) -> None:
        self.table.set_properties({"sleeper.table.partition.splitting.threshold": "10"})
        self.instance.split_now(self.table.name)

    @rule()
    def purge(self) -> None:
        self.table.purge()

    @rule(pick=st.integers(0, 1000))
    def time_travel(self, pick: int) -> None:
        if not self.past:
            return
        number, then = self.past[pick % len(self.past)]
        _check(self.table.scan(as_of=number).to_arrow(), then, set(), f"as of {number}")

    @invariant()
    def one_row_per_key_the_last_written(self) -> None:
        if not self.ready:
            return
        _check(self.table.scan().to_arrow(), self.model, self.written, "full scan")
        _check(self.table.scan(via_queue=True).to_arrow(), self.model, self.written, "queued scan")


def _check(rows: pa.Table, model: Model, written: set[tuple[int, int, int]], what: str) -> None:
    """U1: the rows are the model's, one per key: none lost, resurrected or duplicated."""
    keys = rows.column("key").to_pylist()
    versions = rows.column("version").to_pylist() if "version" in rows.column_names else [0] * len(keys)
    values = rows.column("value").to_pylist()
    got = list(zip(keys, versions, values, strict=True))
    duplicated = len(keys) - len(set(keys))
    lost = [k for k in model if k not in set(keys)]
    resurrected = [r for r in got if model.get(r[0]) != (r[1], r[2])]
    assert (duplicated, lost, resurrected) == (0, [], []), (
        f"U1 {what}: {duplicated} duplicated, lost {lost}, resurrected {resurrected}"
    )
    assert not written or all(r in written for r in got), f"U1 {what}: a row never written"


def should_keep_one_row_per_key_the_last_written_under_random_operations() -> None:
    run_state_machine_as_test(
        UpsertMachine,
        settings=settings(
            max_examples=EXAMPLES,
            stateful_step_count=STEPS,
            derandomize=True,
            database=None,
            deadline=None,
            suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
        ),
    )
