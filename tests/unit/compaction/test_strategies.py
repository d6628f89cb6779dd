"""Compaction strategies: Sleeper's size ratio and basic rules, leaf grouping and the compact-all leftovers."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sleeper.compaction.strategies import (
    BASIC_STRATEGY,
    SIZE_RATIO_STRATEGY,
    BasicCompactionStrategy,
    FilesInPartition,
    InvalidCompactionStrategyError,
    PlannedJob,
    SizeRatioCompactionStrategy,
    UnknownCompactionStrategyError,
    files_in_leaf_partitions,
    leftover_jobs,
    meets_size_ratio,
    strategy_for_table,
)
from sleeper.core.exceptions import PropertyError
from sleeper.core.properties import InstanceProperties, TableProperties, edited_table_properties
from sleeper.core.schema import Field, PrimitiveType, Schema
from sleeper.core.statestore.references import FileReference
from tests.unit.core.statestore.builders import PartitionsBuilder

SCHEMA = Schema.of(row_keys=[Field("key", PrimitiveType.LONG)])


def refs(*sizes: int, partition: str = "root", prefix: str = "f") -> list[FileReference]:
    return [
        FileReference(filename=f"{prefix}{i}.parquet", partition_id=partition, number_of_rows=size)
        for i, size in enumerate(sizes)
    ]


def leaf(*sizes: int, running_jobs: Sequence[str] = (), partition: str = "root") -> FilesInPartition:
    unassigned = sorted(refs(*sizes, partition=partition), key=lambda r: r.number_of_rows)
    assigned = [
        FileReference(filename=f"busy-{job}.parquet", partition_id=partition, number_of_rows=1, job_id=job)
        for job in running_jobs
    ]
    return FilesInPartition(partition_id=partition, unassigned=tuple(unassigned), assigned=tuple(assigned))


def sizes_of(job: PlannedJob) -> list[int]:
    return [r.number_of_rows for r in job.files]


def table_properties(**values: str) -> TableProperties:
    return TableProperties(InstanceProperties(), values)


def named_table() -> TableProperties:
    """A table's properties as a table has them: a name, an id and a schema."""
    properties = TableProperties(
        InstanceProperties({"sleeper.id": "inst"}), {"sleeper.table.name": "t", "sleeper.table.id": "0a1b2c3d"}
    )
    properties.set_schema(SCHEMA)
    return properties


# --- reference model: Sleeper's SizeRatioLeafStrategy written out naively --------------------------------------------
def naive_size_ratio(sizes: list[int], ratio: int, batch: int, max_jobs: int) -> list[list[int]]:
    files = sorted(sizes)
    while len(files) > 1 and not meets_size_ratio(files, ratio):
        files = files[:-1]
    if len(files) < 2:
        return []
    if len(files) <= batch:
        return [files][:max_jobs]
    jobs: list[list[int]] = []
    position = 0
    while position < len(files):
        window = files[position : position + batch]
        if meets_size_ratio(window, ratio):
            jobs.append(window)
            position += len(window)
        else:
            position += 1
    return jobs[:max_jobs]


# --- size ratio ----------------------------------------------------------------------------------------------------
def should_compact_all_files_when_the_ratio_is_met() -> None:
    # Given 4 files of 100 rows: 3 x 100 <= 300
    strategy = SizeRatioCompactionStrategy(ratio=3, files_batch_size=12)

    # When
    jobs = strategy.plan_partition(leaf(100, 100, 100, 100))

    # Then
    assert [sizes_of(j) for j in jobs] == [[100, 100, 100, 100]]
    assert all(j.partition_id == "root" for j in jobs)


def should_create_no_job_when_the_ratio_is_not_met() -> None:
    # Given the small files together are smaller than ratio x the next size
    strategy = SizeRatioCompactionStrategy(ratio=3)

    # When
    jobs = strategy.plan_partition(leaf(1, 2, 100))

    # Then 1+2 < 3x100 and 1 < 3x2: nothing meets the criterion
    assert jobs == []


def should_create_no_job_for_a_single_file() -> None:
    # Given
    strategy = SizeRatioCompactionStrategy()

    # When / Then
    assert strategy.plan_partition(leaf(1000)) == []


def should_drop_the_largest_files_until_the_ratio_is_met() -> None:
    # Given 4 files of 10 rows and one huge file
    strategy = SizeRatioCompactionStrategy(ratio=3)

    # When
    jobs = strategy.plan_partition(leaf(1000, 10, 10, 10, 10))

    # Then the huge file waits; 3 x 10 <= 30
    assert [sizes_of(j) for j in jobs] == [[10, 10, 10, 10]]


def should_take_files_in_ascending_order_of_rows() -> None:
    # Given files listed out of order
    strategy = SizeRatioCompactionStrategy(ratio=1)

    # When
    jobs = strategy.plan_partition(leaf(50, 10, 40, 20, 30))

    # Then
    assert [sizes_of(j) for j in jobs] == [[10, 20, 30, 40, 50]]


def should_split_files_meeting_the_ratio_into_batches() -> None:
    # Given 30 equal files and batches of 12
    strategy = SizeRatioCompactionStrategy(ratio=3, files_batch_size=12)

    # When
    jobs = strategy.plan_partition(leaf(*[100] * 30))

    # Then
    assert [len(j.files) for j in jobs] == [12, 12, 6]
    assert len({r.filename for j in jobs for r in j.files}) == 30


def should_slide_the_window_by_one_file_when_a_batch_fails_the_ratio() -> None:
    # Given batches of 3 and a ratio of 2: [1, 1, 10] fails (2 x 10 > 2), but the whole set meets the ratio
    strategy = SizeRatioCompactionStrategy(ratio=2, files_batch_size=3)
    sizes = [1, 1, 10, 10, 10, 10]

    # When
    jobs = strategy.plan_partition(leaf(*sizes))

    # Then windows [1,1,10] and [1,10,10] fail, [10,10,10] meets it; the last [10] alone cannot
    assert meets_size_ratio(sorted(sizes), 2)
    assert [sizes_of(j) for j in jobs] == [[10, 10, 10]]
    assert jobs == [PlannedJob(partition_id="root", files=leaf(*sizes).unassigned[2:5])]


def should_limit_jobs_by_those_already_running_on_the_partition() -> None:
    # Given 2 jobs running, at most 3 at once, and enough files for 3 jobs
    strategy = SizeRatioCompactionStrategy(ratio=3, files_batch_size=4, max_concurrent_jobs_per_partition=3)

    # When
    jobs = strategy.plan_partition(leaf(*[100] * 12, running_jobs=["a", "b"]))

    # Then only the first job is kept
    assert len(jobs) == 1
    assert sizes_of(jobs[0]) == [100] * 4


def should_create_no_jobs_when_the_running_limit_is_reached() -> None:
    # Given one job running with its files on two references, and a limit of 1
    strategy = SizeRatioCompactionStrategy(max_concurrent_jobs_per_partition=1)
    files = leaf(100, 100, 100, 100, running_jobs=["a", "a"])

    # When
    jobs = strategy.plan_partition(files)

    # Then
    assert files.running_job_ids == {"a"}
    assert jobs == []


@settings(max_examples=150, deadline=None)
@given(
    sizes=st.lists(st.integers(min_value=0, max_value=1000), max_size=60),
    ratio=st.integers(min_value=1, max_value=5),
    batch=st.integers(min_value=1, max_value=15),
    running=st.integers(min_value=0, max_value=4),
    max_jobs=st.integers(min_value=1, max_value=6),
)
def should_match_sleepers_size_ratio_rules_for_any_files(
    sizes: list[int], ratio: int, batch: int, running: int, max_jobs: int
) -> None:
    # Given
    strategy = SizeRatioCompactionStrategy(
        ratio=ratio, files_batch_size=batch, max_concurrent_jobs_per_partition=max_jobs
    )
    files = leaf(*sizes, running_jobs=[f"job{i}" for i in range(running)])

    # When
    jobs = strategy.plan_partition(files)

    # Then it agrees with a plain transcription of Sleeper's rules
    expected = naive_size_ratio(sizes, ratio, batch, max(max_jobs - running, 0))
    assert [sizes_of(j) for j in jobs] == expected
    # and every job is a valid group of distinct unassigned files meeting the ratio
    names = [r.filename for j in jobs for r in j.files]
    assert len(names) == len(set(names))
    for job in jobs:
        assert meets_size_ratio(sizes_of(job), ratio)
        assert sizes_of(job) == sorted(sizes_of(job))
        assert all(r.job_id is None for r in job.files)


# --- basic ---------------------------------------------------------------------------------------------------------
def should_create_a_job_per_full_batch_and_leave_the_rest() -> None:
    # Given 25 files and batches of 12
    strategy = BasicCompactionStrategy(files_batch_size=12)
    files = leaf(*range(25, 0, -1))

    # When
    jobs = strategy.plan_partition(files)

    # Then two jobs of the 24 smallest files; the largest waits
    assert [sizes_of(j) for j in jobs] == [list(range(1, 13)), list(range(13, 25))]


def should_create_no_basic_job_below_the_batch_size() -> None:
    # Given
    strategy = BasicCompactionStrategy(files_batch_size=12)

    # When / Then
    assert strategy.plan_partition(leaf(*[1] * 11)) == []


def should_ignore_the_running_jobs_in_the_basic_strategy() -> None:
    # Given many running jobs
    strategy = BasicCompactionStrategy(files_batch_size=2)

    # When
    jobs = strategy.plan_partition(leaf(1, 2, 3, 4, running_jobs=["a", "b", "c"]))

    # Then
    assert [sizes_of(j) for j in jobs] == [[1, 2], [3, 4]]


# --- grouping by leaf ----------------------------------------------------------------------------------------------
def should_group_unassigned_references_on_leaf_partitions_only() -> None:
    # Given a root split into L and R, with references on all three, some assigned
    partitions = PartitionsBuilder(SCHEMA).split("root", "L", "R", 0).partitions()
    references = [
        *refs(5, 1, partition="L", prefix="l"),
        *refs(7, partition="root", prefix="r"),
        FileReference(filename="busy.parquet", partition_id="L", number_of_rows=3, job_id="job"),
        FileReference(filename="busy-right.parquet", partition_id="R", number_of_rows=3, job_id="job2"),
    ]

    # When
    grouped = files_in_leaf_partitions(references, partitions)

    # Then only L has unassigned files; they are in ascending order; the assigned one is kept apart
    assert [g.partition_id for g in grouped] == ["L"]
    assert [r.filename for r in grouped[0].unassigned] == ["l1.parquet", "l0.parquet"]
    assert [r.filename for r in grouped[0].assigned] == ["busy.parquet"]


def should_plan_every_leaf_in_partition_order() -> None:
    # Given
    partitions = PartitionsBuilder(SCHEMA).split("root", "L", "R", 0).partitions()
    references = [*refs(1, 1, partition="R", prefix="r"), *refs(1, 1, partition="L", prefix="l")]
    leaves = files_in_leaf_partitions(references, partitions)

    # When
    jobs = SizeRatioCompactionStrategy(ratio=1).plan(leaves)

    # Then
    assert [j.partition_id for j in jobs] == [p.id for p in partitions if p.is_leaf]


# --- compact all ---------------------------------------------------------------------------------------------------
@settings(max_examples=80, deadline=None)
@given(
    sizes=st.lists(st.integers(min_value=0, max_value=100), max_size=40),
    batch=st.integers(min_value=1, max_value=10),
)
def should_put_every_leftover_file_in_exactly_one_job(sizes: list[int], batch: int) -> None:
    # Given the strategy's own jobs
    files = leaf(*sizes)
    planned = SizeRatioCompactionStrategy(files_batch_size=batch).plan([files])

    # When
    extra = leftover_jobs([files], planned, batch)

    # Then every unassigned file is in exactly one job, and no job is larger than a batch
    names = [r.filename for j in planned + extra for r in j.files]
    assert sorted(names) == sorted(r.filename for r in files.unassigned)
    assert all(1 <= len(j.files) <= batch for j in extra)


def should_compact_a_single_leftover_file() -> None:
    # Given one file, which no strategy compacts
    files = leaf(100)

    # When
    extra = leftover_jobs([files], [], 12)

    # Then
    assert [sizes_of(j) for j in extra] == [[100]]


# --- choosing a strategy -------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("name", "kind"),
    [
        (SIZE_RATIO_STRATEGY, SizeRatioCompactionStrategy),
        ("sleeper.compaction.strategy.impl.SizeRatioCompactionStrategy", SizeRatioCompactionStrategy),
        ("SizeRatioCompactionStrategy", SizeRatioCompactionStrategy),
        (BASIC_STRATEGY, BasicCompactionStrategy),
        ("sleeper.compaction.strategy.impl.BasicCompactionStrategy", BasicCompactionStrategy),
        ("BasicCompactionStrategy", BasicCompactionStrategy),
    ],
)
def should_choose_the_strategy_sleepers_class_name_names(name: str, kind: type) -> None:
    # Given
    props = table_properties(**{"sleeper.table.compaction.strategy.class": name})

    # When / Then
    assert isinstance(strategy_for_table(props), kind)


def should_use_the_size_ratio_strategy_with_default_settings() -> None:
    # Given no compaction properties set
    props = table_properties()

    # When
    strategy = strategy_for_table(props)

    # Then Sleeper's defaults apply
    assert strategy == SizeRatioCompactionStrategy(
        ratio=3, files_batch_size=12, max_concurrent_jobs_per_partition=2_147_483_647
    )


def should_read_the_strategy_settings_from_table_properties() -> None:
    # Given
    props = table_properties(
        **{
            "sleeper.table.compaction.strategy.sizeratio.ratio": "2",
            "sleeper.table.compaction.files.batch.size": "5",
            "sleeper.table.compaction.strategy.sizeratio.max.concurrent.jobs.per.partition": "7",
        }
    )

    # When
    strategy = strategy_for_table(props)

    # Then
    assert strategy == SizeRatioCompactionStrategy(ratio=2, files_batch_size=5, max_concurrent_jobs_per_partition=7)


def should_fall_back_to_the_instance_default_strategy() -> None:
    # Given the instance default names the basic strategy
    instance = InstanceProperties({"sleeper.default.table.compaction.strategy.class": BASIC_STRATEGY})

    # When
    strategy = strategy_for_table(TableProperties(instance, {}))

    # Then
    assert strategy == BasicCompactionStrategy(files_batch_size=12)


@pytest.mark.parametrize("name", ["com.example.MyStrategy", "other.pkg.SizeRatioCompactionStrategy", "Nope"])
def should_refuse_an_unknown_strategy(name: str) -> None:
    # Given
    props = table_properties(**{"sleeper.table.compaction.strategy.class": name})

    # When / Then
    with pytest.raises(UnknownCompactionStrategyError, match="unknown compaction strategy"):
        strategy_for_table(props)


@pytest.mark.parametrize(
    "name",
    [
        SIZE_RATIO_STRATEGY,
        "sleeper.compaction.strategy.impl.BasicCompactionStrategy",
        "BasicCompactionStrategy",
        " SizeRatioCompactionStrategy ",
    ],
)
def should_accept_every_strategy_name_it_runs_when_the_property_is_set(name: str) -> None:
    # When a user sets the strategy on a table and as the instance default
    edited = edited_table_properties(named_table(), {"sleeper.table.compaction.strategy.class": name})
    instance = InstanceProperties({"sleeper.id": "inst", "sleeper.default.table.compaction.strategy.class": name})

    # Then both are accepted, and the strategy is the one named
    assert instance.problems() == []
    assert type(strategy_for_table(edited)).__name__ == name.strip().rpartition(".")[2]


@pytest.mark.parametrize("name", ["com.example.MyStrategy", "other.pkg.SizeRatioCompactionStrategy", "Nope"])
def should_refuse_an_unknown_strategy_when_the_property_is_set(name: str) -> None:
    # Given a table
    table = named_table()

    # When a user sets a strategy this port does not run, on the table or as the instance default
    with pytest.raises(PropertyError, match=r"sleeper\.table\.compaction\.strategy\.class: invalid value"):
        edited_table_properties(table, {"sleeper.table.compaction.strategy.class": name})
    instance = InstanceProperties({"sleeper.id": "inst", "sleeper.default.table.compaction.strategy.class": name})

    # Then both are refused, naming the property and what it accepts; the table is unchanged
    assert [p.split(":")[0] for p in instance.problems()] == ["sleeper.default.table.compaction.strategy.class"]
    assert "BasicCompactionStrategy" in instance.problems()[0]
    assert table.get("sleeper.table.compaction.strategy.class") == SIZE_RATIO_STRATEGY


def should_refuse_a_batch_size_below_one() -> None:
    # When / Then
    with pytest.raises(InvalidCompactionStrategyError, match="batch size"):
        BasicCompactionStrategy(files_batch_size=0)


def should_refuse_a_planned_job_with_an_assigned_file() -> None:
    # Given
    busy = FileReference(filename="a", partition_id="root", number_of_rows=1, job_id="other")

    # When / Then
    with pytest.raises(InvalidCompactionStrategyError, match="already assigned"):
        PlannedJob(partition_id="root", files=(busy,))
