"""Garbage collection keeps the files an outside reader holds (a published Iceberg snapshot, sleeper.core.held_files)
and collects them once the hold is released."""

from __future__ import annotations

from datetime import timedelta

import pytest

from sleeper.core.held_files import Hold, HoldFormatError, hold_location
from sleeper.gc import collect_garbage
from sleeper.gc.held import held_files
from sleeper.io.filesystem import delete, filesystem_path, write_bytes
from tests.unit.gc.gc_fixtures import FakeTable, new_table

AFTER_DELAY = timedelta(minutes=21)


def _hold(table: FakeTable, hold_id: str, *files: str) -> str:
    location = hold_location(table.data_prefix, hold_id)
    hold = Hold.of(hold_id, table.table_id, table.clock.now, files)
    write_bytes(table.filesystem, filesystem_path(location), hold.to_bytes())
    return location


def _gc(table: FakeTable):  # type: ignore[no-untyped-def]
    return collect_garbage(table, now=table.clock.now, filesystem=table.filesystem)


def should_keep_a_held_file_however_long_it_has_been_unreferenced_and_collect_it_once_released() -> None:
    # Given a and b compacted into c, and a hold naming a (as a published snapshot listing a would)
    table = new_table()
    a, b = table.add_referenced("a"), table.add_referenced("b")
    c = table.compact([a, b], "c")
    hold = _hold(table, "publish-1", a, c)
    table.clock.advance(AFTER_DELAY)

    # When the collector runs past the delay
    held = _gc(table)

    # Then b is collected, a is kept and reported held, and stays tracked
    assert held.deleted == (b,)
    assert held.held == (a,)
    assert table.exists(a) and not table.exists(b)
    assert table.tracked() == {a, c}

    # When the hold is released and the collector runs again
    delete(table.filesystem, filesystem_path(hold))
    released = _gc(table)

    # Then a is collected
    assert released.deleted == (a,)
    assert not table.exists(a)
    assert table.tracked() == {c}


def should_take_the_union_of_every_hold() -> None:
    # Given two holds, each naming one of two compacted files
    table = new_table()
    a, b = table.add_referenced("a"), table.add_referenced("b")
    table.compact([a, b], "c")
    _hold(table, "publish-1", a)
    _hold(table, "publish-2", b)
    table.clock.advance(AFTER_DELAY)

    # When the collector runs
    result = _gc(table)

    # Then both are kept
    assert result.deleted == ()
    assert set(result.held) == {a, b}
    assert held_files(table.data_prefix, filesystem=table.filesystem) == {a, b}


def should_delete_nothing_when_a_hold_cannot_be_read() -> None:
    # Given a compacted file and a corrupt hold
    table = new_table()
    a = table.add_referenced("a")
    table.compact([a], "c")
    write_bytes(table.filesystem, filesystem_path(hold_location(table.data_prefix, "broken")), b"not gzip")
    table.clock.advance(AFTER_DELAY)

    # When the collector runs, then it refuses, naming the hold, and a is still there and tracked
    with pytest.raises(HoldFormatError, match="broken"):
        _gc(table)
    assert table.exists(a)
    assert a in table.tracked()


def should_not_read_holds_when_no_file_is_ready() -> None:
    # Given a corrupt hold but nothing unreferenced for the delay
    table = new_table()
    table.add_referenced("a")
    write_bytes(table.filesystem, filesystem_path(hold_location(table.data_prefix, "broken")), b"not gzip")

    # When the collector runs, then it has nothing to do and does not fail
    assert _gc(table).deleted == ()
