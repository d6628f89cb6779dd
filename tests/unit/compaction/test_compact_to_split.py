"""Jobs that make a leaf over the split threshold splittable when its rows are only known approximately."""

from __future__ import annotations

from sleeper.compaction.strategies import FilesInPartition, PlannedJob, compact_to_split_jobs
from sleeper.core.statestore.references import FileReference


def _ref(
    name: str,
    rows: int,
    *,
    approximate: bool = False,
    whole: bool = True,
    job: str | None = None,
    partition: str = "leaf",
) -> FileReference:
    return FileReference(
        filename=name,
        partition_id=partition,
        number_of_rows=rows,
        count_approximate=approximate,
        only_contains_data_for_this_partition=whole,
        job_id=job,
    )


def should_compact_a_leaf_whose_rows_are_only_estimated_over_the_threshold() -> None:
    # Given a leaf holding half of a split parent's file: 600 rows estimated, none known exactly
    leaf = FilesInPartition(partition_id="leaf", unassigned=(_ref("half", 600, approximate=True, whole=False),))
    # When compact-to-split jobs are planned with a threshold of 500
    jobs = compact_to_split_jobs([leaf], [], 500, 12)
    # Then one job compacts that file
    assert [[r.filename for r in j.files] for j in jobs] == [["half"]]


def should_not_compact_a_leaf_the_splitter_can_already_split_or_that_is_small() -> None:
    # Given a leaf with 600 exact rows, and one with 300 estimated rows
    exact = FilesInPartition(partition_id="exact", unassigned=(_ref("a", 600),))
    small = FilesInPartition(partition_id="small", unassigned=(_ref("b", 300, approximate=True),))
    # When compact-to-split jobs are planned with a threshold of 500
    # Then neither needs one
    assert compact_to_split_jobs([exact, small], [], 500, 12) == []


def should_leave_leaves_with_planned_or_running_jobs_alone() -> None:
    # Given two leaves over the threshold by estimate: one with a planned job, one with a running job
    planned_leaf = FilesInPartition(partition_id="p", unassigned=(_ref("a", 600, approximate=True, partition="p"),))
    running_leaf = FilesInPartition(
        partition_id="r",
        unassigned=(_ref("b", 600, approximate=True, partition="r"),),
        assigned=(_ref("c", 10, job="job-1", partition="r"),),
    )
    planned = [PlannedJob(partition_id="p", files=planned_leaf.unassigned)]
    # When compact-to-split jobs are planned
    # Then there are none
    assert compact_to_split_jobs([planned_leaf, running_leaf], planned, 500, 12) == []


def should_take_at_most_a_batch_of_files() -> None:
    # Given a leaf with 5 approximate references
    refs = tuple(_ref(f"f{i}", 200, approximate=True) for i in range(5))
    leaf = FilesInPartition(partition_id="leaf", unassigned=refs)
    # When planned with a batch size of 3
    (job,) = compact_to_split_jobs([leaf], [], 500, 3)
    # Then the job takes the first 3
    assert [r.filename for r in job.files] == ["f0", "f1", "f2"]
