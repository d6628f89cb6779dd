"""Contract of the table index, over every adapter family."""

from __future__ import annotations

import pytest

from sleeper.core.exceptions import TableAlreadyExistsError, TableNotFoundError
from sleeper.core.table import TableIndex, TableStatus


def _table(table_id: str, name: str, online: bool = True) -> TableStatus:
    return TableStatus(table_id=table_id, table_name=name, online=online)


def should_find_a_created_table_by_name_and_id(table_index: TableIndex) -> None:
    # Given a table
    table = _table("0a1b2c3d", "orders")
    # When it is created
    table_index.create(table)
    # Then it is found both ways
    assert table_index.get_by_name("orders") == table
    assert table_index.get_by_id("0a1b2c3d") == table


def should_refuse_a_taken_name_or_id(table_index: TableIndex) -> None:
    # Given a table
    table_index.create(_table("0a1b2c3d", "orders"))
    # When / Then another table with its name, or its id, is refused
    with pytest.raises(TableAlreadyExistsError):
        table_index.create(_table("ffffffff", "orders"))
    with pytest.raises(TableAlreadyExistsError):
        table_index.create(_table("0a1b2c3d", "customers"))
    assert table_index.list_tables() == [_table("0a1b2c3d", "orders")]


def should_report_missing_tables(table_index: TableIndex) -> None:
    # When / Then
    with pytest.raises(TableNotFoundError):
        table_index.get_by_name("nothing")
    with pytest.raises(TableNotFoundError):
        table_index.get_by_id("00000000")
    with pytest.raises(TableNotFoundError):
        table_index.rename("00000000", "x")
    with pytest.raises(TableNotFoundError):
        table_index.set_online("00000000", False)
    with pytest.raises(TableNotFoundError):
        table_index.delete("00000000")


def should_list_tables_by_name_and_only_online_ones(table_index: TableIndex) -> None:
    # Given tables created out of name order, one offline
    for table in (_table("3", "c"), _table("1", "a", online=False), _table("2", "b"), _table("4", "B")):
        table_index.create(table)
    # When / Then they are listed in name order (code point order), online ones separately
    assert [t.table_name for t in table_index.list_tables()] == ["B", "a", "b", "c"]
    assert [t.table_name for t in table_index.list_online_tables()] == ["B", "b", "c"]


def should_rename_a_table(table_index: TableIndex) -> None:
    # Given two tables
    table_index.create(_table("1", "old"))
    table_index.create(_table("2", "other"))
    # When one is renamed
    renamed = table_index.rename("1", "new")
    # Then it is found by its new name only, keeping its id
    assert renamed == _table("1", "new")
    assert table_index.get_by_name("new") == renamed
    with pytest.raises(TableNotFoundError):
        table_index.get_by_name("old")
    # And renaming onto the other table's name is refused
    with pytest.raises(TableAlreadyExistsError):
        table_index.rename("1", "other")
    assert table_index.get_by_id("1").table_name == "new"
    # And renaming to its own name changes nothing
    assert table_index.rename("1", "new") == renamed


def should_take_a_table_offline_and_online(table_index: TableIndex) -> None:
    # Given an online table
    table_index.create(_table("1", "t"))
    # When it is taken offline
    offline = table_index.set_online("1", False)
    # Then it is offline and not listed online; and it comes back online
    assert offline == _table("1", "t", online=False)
    assert table_index.get_by_name("t").online is False
    assert table_index.list_online_tables() == []
    assert table_index.set_online("1", True) == _table("1", "t")
    assert table_index.list_online_tables() == [_table("1", "t")]


def should_delete_a_table_freeing_its_name(table_index: TableIndex) -> None:
    # Given a table
    table_index.create(_table("1", "t"))
    # When it is deleted
    table_index.delete("1")
    # Then it is gone, and its name can be used again
    assert table_index.list_tables() == []
    table_index.create(_table("2", "t"))
    assert table_index.get_by_name("t").table_id == "2"
