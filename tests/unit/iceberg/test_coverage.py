"""Which referenced files an Iceberg view can list whole (sleeper.iceberg.coverage): a file belongs whole only if its
referencing partitions cover every row group's key range; otherwise it is published as a trimmed copy."""

from __future__ import annotations

from collections.abc import Mapping

from sleeper.core.partition import ROOT_ID, Partition, PartitionTree, split_partition
from sleeper.core.range import Region
from sleeper.core.schema import Field, KeyValue, PrimitiveType, Schema
from sleeper.core.statestore.references import AllReferencesToAFile, FileReference
from sleeper.iceberg.coverage import covered, plan_file, row_group_box
from sleeper.io.parquet_reader import RowGroupInfo, SortedFileMetadata

SCHEMA = Schema(row_key_fields=(Field("key", PrimitiveType.LONG),), value_fields=(Field("v", PrimitiveType.LONG),))
TWO_KEYS = Schema(
    row_key_fields=(Field("a", PrimitiveType.LONG), Field("b", PrimitiveType.STRING)),
    value_fields=(Field("v", PrimitiveType.LONG),),
)


def _ids(*names: str):  # type: ignore[no-untyped-def]
    supply = iter(names)
    return lambda: next(supply)


def _tree() -> PartitionTree:
    """root split at 100 into L [min, 100) and R [100, max); R split at 200 into RL and RR."""
    root = Partition(id=ROOT_ID, parent_id=None, region=Region.whole(SCHEMA))
    root, left, right = split_partition(SCHEMA, root, 0, 100, id_supplier=_ids("L", "R"))
    right, right_left, right_right = split_partition(SCHEMA, right, 0, 200, id_supplier=_ids("RL", "RR"))
    return PartitionTree(SCHEMA, [root, left, right, right_left, right_right])


def _metadata(*groups: tuple[int, int]) -> SortedFileMetadata:
    return SortedFileMetadata(
        rows=10 * len(groups),
        row_groups=tuple(
            RowGroupInfo(index=i, rows=10, compressed_bytes=1, min={"key": low}, max={"key": high})
            for i, (low, high) in enumerate(groups)
        ),
    )


def _entry(*partitions: str, within: bool = False) -> AllReferencesToAFile:
    refs = {
        p: FileReference(
            filename="f.parquet", partition_id=p, number_of_rows=5, only_contains_data_for_this_partition=within
        )
        for p in partitions
    }
    return AllReferencesToAFile(filename="f.parquet", references=refs)


def _plan(entry: AllReferencesToAFile, metadata: SortedFileMetadata):  # type: ignore[no-untyped-def]
    return plan_file(entry, _tree(), lambda _: metadata)


def should_list_a_file_whole_when_its_references_cover_every_leaf_its_rows_span() -> None:
    # Given a file with keys 50..250, referenced on L, RL and RR (as one_reference_per_leaf ingest writes it)
    plan = _plan(_entry("L", "RL", "RR"), _metadata((50, 150), (150, 250)))
    # Then it is published whole
    assert plan.whole and plan.partition_ids == ("L", "RL", "RR")


def should_trim_a_file_once_a_compaction_took_one_of_its_references() -> None:
    # Given the same file after a compaction of L replaced its reference there
    plan = _plan(_entry("RL", "RR"), _metadata((50, 150), (150, 250)))
    # Then only its rows in R belong to the table: it is trimmed
    assert not plan.whole


def should_list_a_file_whole_when_its_remaining_references_still_cover_its_keys() -> None:
    # Given a file with keys 120..250 referenced on RL and RR only
    plan = _plan(_entry("RL", "RR"), _metadata((120, 180), (190, 250)))
    # Then every row is in R: it is whole
    assert plan.whole


def should_count_a_parent_reference_as_covering_its_children() -> None:
    # Given a file with keys 100..300 referenced on R (a split not yet pushed down to RL and RR)
    assert _plan(_entry("R"), _metadata((100, 300))).whole
    # And a file with keys 90..300 referenced on R only
    assert not _plan(_entry("R"), _metadata((90, 300))).whole


def should_not_read_the_footer_when_a_reference_says_the_file_is_within_its_partition_or_on_the_root() -> None:
    def refuse(_: str) -> SortedFileMetadata:
        raise AssertionError("footer read")

    # Given a file written for one leaf, and a file on the root
    within = plan_file(_entry("L", within=True), _tree(), refuse)
    on_root = plan_file(_entry(ROOT_ID), _tree(), refuse)
    # Then both are whole without a read
    assert within.whole and on_root.whole


def should_take_a_field_without_statistics_as_spanning_its_whole_dimension() -> None:
    # Given a row group with no statistics for the key
    metadata = SortedFileMetadata(
        rows=10, row_groups=(RowGroupInfo(index=0, rows=10, compressed_bytes=1, min={}, max={}),)
    )
    # Then only references covering the root make it whole
    assert not _plan(_entry("RL", "RR"), metadata).whole
    assert _plan(_entry("L", "RL", "RR"), metadata).whole


def should_cover_boxes_over_two_row_key_dimensions() -> None:
    # Given a tree split on a at 10, then its right half split on b at "m"
    root = Partition(id=ROOT_ID, parent_id=None, region=Region.whole(TWO_KEYS))
    root, low, high = split_partition(TWO_KEYS, root, 0, 10, id_supplier=_ids("LO", "HI"))
    high, high_b_low, high_b_high = split_partition(TWO_KEYS, high, 1, "m", id_supplier=_ids("HB1", "HB2"))
    tree = PartitionTree(TWO_KEYS, [root, low, high, high_b_low, high_b_high])

    def box(mins: Mapping[str, KeyValue], maxs: Mapping[str, KeyValue]):  # type: ignore[no-untyped-def]
        return row_group_box(TWO_KEYS, mins, maxs)

    # Then a box with a >= 10 and b < "m" lies in HB1 alone
    assert covered(tree, frozenset({"HB1"}), box({"a": 10, "b": "a"}, {"a": 50, "b": "l"}))
    # And one reaching b = "z" needs HB2 too
    assert not covered(tree, frozenset({"HB1"}), box({"a": 10, "b": "a"}, {"a": 50, "b": "z"}))
    assert covered(tree, frozenset({"HB1", "HB2"}), box({"a": 10, "b": "a"}, {"a": 50, "b": "z"}))
    # And one reaching a = 5 needs LO
    assert not covered(tree, frozenset({"HB1", "HB2"}), box({"a": 5, "b": "a"}, {"a": 50, "b": "z"}))
    assert covered(tree, frozenset({"LO", "HB1", "HB2"}), box({"a": 5, "b": "a"}, {"a": 50, "b": "z"}))
