"""Splitting a partition at the median of its files' merged sketches, with a conditional commit."""

from __future__ import annotations

import dataclasses
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from sleeper.core.jobs.commit import StateStoreCommitRequest
from sleeper.core.jobs.exceptions import UnknownTableError
from sleeper.core.jobs.splitting import SplitPartitionJob
from sleeper.core.partition import Partition, partitions_from_split_points, split_partition
from sleeper.core.statestore.transactions.partitions import SplitPartitionTransaction
from sleeper.splitting import (
    MissingSketchesError,
    SplitOutcome,
    UntrackedFileError,
    run_split_job_message,
    split_partition_job,
)
from sleeper.splitting.ports import STATE_STORE_COMMITTER_QUEUE
from tests.reliability_report import Reliability
from tests.unit.splitting.splitting_fixtures import TWO_KEYS, FakeInstance, FakeTable, id_supplier, new_table


def _root(table: FakeTable) -> Partition:
    return table.state_store.partition_tree().get("root")


def _job(table: FakeTable, partition: Partition, *filenames: str) -> SplitPartitionJob:
    return SplitPartitionJob.of(table.table_id, partition, filenames)


def should_split_at_the_median_of_the_merged_sketches_of_every_file() -> None:
    # Given files whose own medians (500 and 2000) are far from the median of all their rows (1500)
    table = new_table()
    low = np.arange(0, 1000)
    high = np.arange(1000, 3000)
    a = table.add_file("a", {"key": low.tolist(), "v": low.tolist()})
    b = table.add_file("b", {"key": high.tolist(), "v": high.tolist()})

    # When
    result = split_partition_job(
        _job(table, _root(table), a, b), table, id_supplier=id_supplier("L", "R"), filesystem=table.filesystem
    )

    # Then
    assert result.outcome is SplitOutcome.SPLIT
    assert result.dimension == 0
    everything = np.concatenate([low, high])
    rank = float(np.mean(everything < result.split_point))
    assert abs(rank - 0.5) < 0.01
    tree = table.state_store.partition_tree()
    assert {p.id for p in tree.leaves} == {"L", "R"}
    assert tree.get("root").child_ids == ("L", "R")
    assert tree.get("root").dimension == 0


def should_make_children_from_the_parent_min_to_the_median_and_from_the_median_to_the_parent_max() -> None:
    # Given
    table = new_table()
    keys = list(range(100))
    f = table.add_file("f", {"key": keys, "v": keys})
    root = _root(table)

    # When
    result = split_partition_job(
        _job(table, root, f), table, id_supplier=id_supplier("L", "R"), filesystem=table.filesystem
    )

    # Then
    expected = split_partition(table.schema, root, 0, result.split_point, id_supplier=id_supplier("L", "R"))
    tree = table.state_store.partition_tree()
    assert (tree.get("root"), tree.get("L"), tree.get("R")) == expected
    assert result.children == expected[1:]
    tree.validate()


def should_split_on_the_second_dimension_when_the_first_has_median_equal_to_minimum() -> None:
    # Given most rows share the smallest value of the first key, so its median is its minimum
    table = new_table(TWO_KEYS)
    a = [0] * 80 + list(range(1, 21))
    b = [f"k{i:03d}" for i in range(100)]
    f = table.add_file("f", {"a": a, "b": b, "v": list(range(100))})

    # When
    result = split_partition_job(_job(table, _root(table), f), table, filesystem=table.filesystem)

    # Then
    assert result.outcome is SplitOutcome.SPLIT
    assert result.dimension == 1
    assert isinstance(result.split_point, str)
    assert "k000" < result.split_point < "k099"
    assert table.state_store.partition_tree().get("root").dimension == 1


def should_not_split_when_every_row_has_the_same_key() -> None:
    # Given
    table = new_table(TWO_KEYS)
    f = table.add_file("f", {"a": [7] * 50, "b": ["same"] * 50, "v": list(range(50))})
    before = table.state_store.partitions()

    # When
    result = split_partition_job(_job(table, _root(table), f), table, filesystem=table.filesystem)

    # Then
    assert result.outcome is SplitOutcome.NOT_SPLITTABLE
    assert table.state_store.partitions() == before


def should_report_already_split_when_another_splitter_commits_first() -> None:
    # Given another splitter commits its split of the same leaf just before this one's commit
    table = new_table()
    keys = list(range(200))
    f = table.add_file("f", {"key": keys, "v": keys})
    root = _root(table)
    parent, left, right = split_partition(table.schema, root, 0, 50, id_supplier=id_supplier("X", "Y"))
    other = table.other_store()
    log = table.backend.transaction_log(table.table_id, SplitPartitionTransaction.LOG)
    log.at_start_of_next_add(lambda: other.commit(SplitPartitionTransaction(parent=parent, new_children=(left, right))))

    # When
    result = split_partition_job(_job(table, root, f), table, filesystem=table.filesystem)

    # Then the winner's split stands and nothing else changed
    assert result.outcome is SplitOutcome.ALREADY_SPLIT
    tree = table.state_store.partition_tree()
    assert len(tree) == 3
    assert {p.id for p in tree.leaves} == {"X", "Y"}


def should_report_already_split_for_a_job_on_a_partition_split_since() -> None:
    # Given
    table = new_table()
    keys = list(range(200))
    f = table.add_file("f", {"key": keys, "v": keys})
    job = _job(table, _root(table), f)
    first = split_partition_job(job, table, filesystem=table.filesystem)

    # When
    second = split_partition_job(job, table, filesystem=table.filesystem)

    # Then
    assert first.outcome is SplitOutcome.SPLIT
    assert second.outcome is SplitOutcome.ALREADY_SPLIT
    assert len(table.state_store.partitions()) == 3


def should_report_a_partition_that_no_longer_exists() -> None:
    # Given the table was repartitioned after the job was made
    table = new_table()
    keys = list(range(200))
    f = table.add_file("f", {"key": keys, "v": keys})
    job = _job(table, _root(table), f)
    table.state_store.clear_files()
    table.state_store.initialise(partitions_from_split_points(table.schema, [10]))

    # When
    result = split_partition_job(job, table, filesystem=table.filesystem)

    # Then
    assert result.outcome is SplitOutcome.PARTITION_NOT_FOUND
    assert len(table.state_store.partitions()) == 3


def should_fail_when_a_file_has_no_sketches() -> None:
    # Given
    table = new_table()
    keys = list(range(200))
    good = table.add_file("good", {"key": keys, "v": keys})
    bad = table.add_file("bad", {"key": keys, "v": keys}, sketches=False)

    # When / Then
    with pytest.raises(MissingSketchesError, match="bad.sketches"):
        split_partition_job(_job(table, _root(table), good, bad), table, filesystem=table.filesystem)
    assert len(table.state_store.partitions()) == 1


def should_refuse_files_the_table_does_not_track() -> None:
    # Given
    table = new_table()
    forged = "s3a://other-bucket/other-table/data/partition_root/x.parquet"

    # When / Then
    with pytest.raises(UntrackedFileError, match="other-bucket"):
        split_partition_job(_job(table, _root(table), forged), table, filesystem=table.filesystem)
    assert len(table.state_store.partitions()) == 1


def should_send_the_split_to_the_committer_when_commits_are_asynchronous() -> None:
    # Given
    table = new_table(properties={"sleeper.table.partition.splitting.commit.async": "true"})
    keys = list(range(200))
    f = table.add_file("f", {"key": keys, "v": keys})
    instance = FakeInstance(tables={table.table_id: table})
    body = _job(table, _root(table), f).to_json(table.schema)

    # When
    result = run_split_job_message(instance, body, id_supplier=id_supplier("L", "R"), filesystem=table.filesystem)

    # Then the table is unchanged and the committer got the conditional split
    assert result.outcome is SplitOutcome.SENT
    assert len(table.state_store.partitions()) == 1
    [message] = instance.queue(STATE_STORE_COMMITTER_QUEUE).receive(10)
    assert message.group_id == table.table_id
    transaction = StateStoreCommitRequest.from_json(message.body).transaction(table.schema)
    assert transaction == SplitPartitionTransaction(parent=result.parent, new_children=result.children)
    table.state_store.commit(transaction)
    assert {p.id for p in table.state_store.leaf_partitions()} == {"L", "R"}


def should_split_from_a_queue_message_with_synchronous_commits() -> None:
    # Given
    table = new_table()
    keys = list(range(200))
    f = table.add_file("f", {"key": keys, "v": keys})
    instance = FakeInstance(tables={table.table_id: table})

    # When
    result = run_split_job_message(
        instance, _job(table, _root(table), f).to_json(table.schema), filesystem=table.filesystem
    )

    # Then
    assert result.outcome is SplitOutcome.SPLIT
    assert len(table.state_store.leaf_partitions()) == 2
    assert instance.queue(STATE_STORE_COMMITTER_QUEUE).receive(10) == []


@pytest.mark.parametrize("split_points", ["different", "identical"])
def should_apply_exactly_one_of_two_splitters_racing_on_the_same_leaf(
    split_points: str, reliability: Reliability
) -> None:
    # Given two splitters, each with its own state store object, on files giving different (or the same) split points
    table = new_table()
    low = list(range(100))
    high = list(range(50, 400))
    a = table.add_file("a", {"key": low, "v": low})
    b = table.add_file("b", {"key": high, "v": high})
    root = _root(table)
    views = [dataclasses.replace(table, state_store=table.other_store()) for _ in range(2)]
    jobs = [_job(table, root, a), _job(table, root, b if split_points == "different" else a)]
    barrier = threading.Barrier(2)
    references_before = sorted((r.filename, r.number_of_rows) for r in table.state_store.file_references())

    def run(i: int) -> SplitOutcome:
        barrier.wait()
        return split_partition_job(jobs[i], views[i], filesystem=table.filesystem).outcome

    # When
    with ThreadPoolExecutor(max_workers=2) as pool:
        outcomes = sorted(pool.map(run, range(2)), key=lambda o: o.value)

    # Then
    tree = table.state_store.partition_tree()
    try:
        tree.validate()
        i4_holds = True
    except Exception:  # noqa: BLE001 - any failure of the tree's own check is I4 broken
        i4_holds = False
    references_after = sorted((r.filename, r.number_of_rows) for r in table.state_store.file_references())
    reliability.record(
        "A4",
        case=f"two splitters, {split_points} split points",
        splitters=len(outcomes),
        splits_applied=outcomes.count(SplitOutcome.SPLIT),
        losers_reported_already_split=outcomes.count(SplitOutcome.ALREADY_SPLIT),
        losers_unreported=len(outcomes)
        - outcomes.count(SplitOutcome.SPLIT)
        - outcomes.count(SplitOutcome.ALREADY_SPLIT),
        partitions_after=len(tree),
        i4_holds=i4_holds,
        rows_lost=max(0, sum(n for _, n in references_before) - sum(n for _, n in references_after)),
    )
    assert outcomes == [SplitOutcome.ALREADY_SPLIT, SplitOutcome.SPLIT]
    tree = table.state_store.partition_tree()
    assert len(tree) == 3
    tree.validate()


def should_reject_a_message_for_a_table_that_does_not_exist() -> None:
    # Given
    table = new_table()
    body = _job(table, _root(table), table.file_location("f")).to_json(table.schema)
    instance = FakeInstance(tables={})

    # When / Then
    with pytest.raises(UnknownTableError, match=table.table_id):
        run_split_job_message(instance, body, filesystem=table.filesystem)


def _sleepers_split(columns: list[list[object]]) -> tuple[int, object] | None:
    """Sleeper's rule on exact sketches of these rows: per dimension in order, the median is the value at position
    floor(n / 2) of the sorted values (DataSketches 3.3.0's getQuantile(0.5)); split on the first dimension where
    min < median < max."""
    for dimension, values in enumerate(columns):
        ordered = sorted(values)  # type: ignore[type-var]
        low, median, high = ordered[0], ordered[len(ordered) // 2], ordered[-1]
        if low < median < high:  # type: ignore[operator]
            return dimension, median
    return None


@pytest.mark.parametrize("seed", range(12))
def should_split_small_tables_where_sleepers_splitter_does(seed: int) -> None:
    # Given a small table (under 2,048 rows, so Sleeper's sketches of its files hold every row) of one to four files of
    # two row keys, some with few distinct values so that the first dimension may not split
    rng = np.random.default_rng(seed)
    table = new_table(TWO_KEYS)
    distinct = int(rng.choice([1, 2, 3, 50, 1000]))
    files, a_values, b_values = [], [], []
    for i in range(int(rng.integers(1, 5))):
        rows = int(rng.integers(1, 500))
        a = rng.integers(0, distinct, rows).tolist()
        b = [f"b{x:04d}" for x in rng.integers(0, int(rng.choice([1, 5, 9999])), rows)]
        files.append(table.add_file(f"f{i}", {"a": a, "b": b, "v": list(range(rows))}))
        a_values += a
        b_values += b

    # When the root is split
    result = split_partition_job(
        _job(table, _root(table), *files), table, id_supplier=id_supplier("L", "R"), filesystem=table.filesystem
    )

    # Then the split is the one Sleeper's rule gives for those rows, or none where it gives none
    expected = _sleepers_split([a_values, b_values])
    if expected is None:
        assert result.outcome is SplitOutcome.NOT_SPLITTABLE
    else:
        assert result.outcome is SplitOutcome.SPLIT
        assert (result.dimension, result.split_point) == expected


def should_split_an_even_number_of_rows_at_the_upper_middle_value_as_sleeper() -> None:
    # Given four rows: Sleeper's median is the value at position 2 (30), not the lower middle value (20)
    table = new_table()
    f = table.add_file("f", {"key": [10, 20, 30, 40], "v": [1, 2, 3, 4]})
    # When
    result = split_partition_job(_job(table, _root(table), f), table, filesystem=table.filesystem)
    # Then
    assert (result.dimension, result.split_point) == (0, 30)
