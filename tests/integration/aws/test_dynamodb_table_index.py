"""The DynamoDB table index, on a moto server."""

from __future__ import annotations

import pytest

from sleeper.core.exceptions import TableAlreadyExistsError, TableNotFoundError
from sleeper.core.table import TableStatus
from tests.contract.aws_backends import AwsTableIndex

pytestmark = [pytest.mark.integration, pytest.mark.aws]


def _rows(aws_table_index: AwsTableIndex) -> dict[str, list[dict[str, str]]]:
    """Every item of the three index tables, as plain strings, sorted."""
    names = aws_table_index.table_names
    rows: dict[str, list[dict[str, str]]] = {}
    for label, table_name in [("by_name", names.by_name), ("by_id", names.by_id), ("by_online", names.by_online)]:
        items = aws_table_index.dynamodb.scan(TableName=table_name, ConsistentRead=True)["Items"]
        plain = [{key: value["S"] for key, value in item.items()} for item in items]
        rows[label] = sorted(plain, key=lambda row: (row["TableName"], row["TableId"]))
    return rows


def _expected_rows(*tables: TableStatus) -> dict[str, list[dict[str, str]]]:
    row = [
        {"TableId": t.table_id, "TableName": t.table_name, "Online": "true" if t.online else "false"}
        for t in sorted(tables, key=lambda t: (t.table_name, t.table_id))
    ]
    return {"by_name": row, "by_id": row, "by_online": row}


def should_find_a_created_table_by_name_and_id(aws_table_index: AwsTableIndex) -> None:
    # Given an index
    index = aws_table_index.index
    table = TableStatus(table_id="0a1b2c3d", table_name="events")
    # When a table is created
    index.create(table)
    # Then it is found both ways, and each index table holds its row
    assert index.get_by_name("events") == table
    assert index.get_by_id("0a1b2c3d") == table
    assert _rows(aws_table_index) == _expected_rows(table)


def should_refuse_a_taken_name_or_id(aws_table_index: AwsTableIndex) -> None:
    # Given a table
    index = aws_table_index.index
    table = TableStatus(table_id="0a1b2c3d", table_name="events")
    index.create(table)
    # When tables with its name or its id are created
    with pytest.raises(TableAlreadyExistsError, match="events"):
        index.create(TableStatus(table_id="ffffffff", table_name="events"))
    with pytest.raises(TableAlreadyExistsError, match="0a1b2c3d"):
        index.create(TableStatus(table_id="0a1b2c3d", table_name="other"))
    # Then nothing was written for them
    assert _rows(aws_table_index) == _expected_rows(table)


def should_report_unknown_tables(aws_table_index: AwsTableIndex) -> None:
    # Given an empty index
    index = aws_table_index.index
    # When unknown tables are looked up or changed
    # Then they are not found
    with pytest.raises(TableNotFoundError):
        index.get_by_name("events")
    with pytest.raises(TableNotFoundError):
        index.get_by_id("0a1b2c3d")
    with pytest.raises(TableNotFoundError):
        index.rename("0a1b2c3d", "new")
    with pytest.raises(TableNotFoundError):
        index.set_online("0a1b2c3d", False)
    with pytest.raises(TableNotFoundError):
        index.delete("0a1b2c3d")


def should_list_tables_and_online_tables_by_name(aws_table_index: AwsTableIndex) -> None:
    # Given three tables, one offline, created out of name order
    index = aws_table_index.index
    charlie = TableStatus(table_id="00000003", table_name="charlie")
    alpha = TableStatus(table_id="00000002", table_name="alpha", online=False)
    bravo = TableStatus(table_id="00000001", table_name="bravo")
    for table in (charlie, alpha, bravo):
        index.create(table)
    # When the tables are listed
    # Then all are ordered by name, and the online listing leaves out the offline one
    assert index.list_tables() == [alpha, bravo, charlie]
    assert index.list_online_tables() == [bravo, charlie]


def should_rename_a_table_in_every_index_table(aws_table_index: AwsTableIndex) -> None:
    # Given an offline table
    index = aws_table_index.index
    index.create(TableStatus(table_id="0a1b2c3d", table_name="events", online=False))
    # When it is renamed
    renamed = index.rename("0a1b2c3d", "archive")
    # Then it is found by the new name only, and the three index tables agree
    assert renamed == TableStatus(table_id="0a1b2c3d", table_name="archive", online=False)
    assert index.get_by_name("archive") == renamed
    with pytest.raises(TableNotFoundError):
        index.get_by_name("events")
    assert _rows(aws_table_index) == _expected_rows(renamed)


def should_refuse_to_rename_to_a_taken_name(aws_table_index: AwsTableIndex) -> None:
    # Given two tables
    index = aws_table_index.index
    events = TableStatus(table_id="0a1b2c3d", table_name="events")
    users = TableStatus(table_id="11111111", table_name="users")
    index.create(events)
    index.create(users)
    # When one is renamed to the other's name
    with pytest.raises(TableAlreadyExistsError, match="users"):
        index.rename("0a1b2c3d", "users")
    # Then both are unchanged
    assert _rows(aws_table_index) == _expected_rows(events, users)


def should_take_a_table_offline_and_online_again(aws_table_index: AwsTableIndex) -> None:
    # Given an online table
    index = aws_table_index.index
    index.create(TableStatus(table_id="0a1b2c3d", table_name="events"))
    # When it is taken offline
    offline = index.set_online("0a1b2c3d", False)
    # Then it is offline in every index table and not listed as online
    assert offline == TableStatus(table_id="0a1b2c3d", table_name="events", online=False)
    assert index.list_online_tables() == []
    assert _rows(aws_table_index) == _expected_rows(offline)
    # And when it is put online again it is listed again
    assert index.set_online("0a1b2c3d", True).online
    assert index.list_online_tables() == [offline.taken_online(True)]


def should_delete_a_table_from_every_index_table(aws_table_index: AwsTableIndex) -> None:
    # Given two tables
    index = aws_table_index.index
    index.create(TableStatus(table_id="0a1b2c3d", table_name="events"))
    users = TableStatus(table_id="11111111", table_name="users")
    index.create(users)
    # When one is deleted
    index.delete("0a1b2c3d")
    # Then only the other is left anywhere, and the name can be used again
    assert _rows(aws_table_index) == _expected_rows(users)
    index.create(TableStatus(table_id="22222222", table_name="events"))
    assert index.get_by_name("events").table_id == "22222222"
