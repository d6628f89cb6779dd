"""The upsert rule (``sleeper.table.upsert``): one row per row key, the last of each run in a sorted stream, against a
row-by-row reference on random input cut into random batches; and its refusals with aggregations and iterators."""

from __future__ import annotations

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sleeper.core.properties import InstanceProperties, TableProperties
from sleeper.iterators import ProcessingConfig
from sleeper.iterators.apply import RowProcessor
from sleeper.iterators.exceptions import IteratorConfigError
from sleeper.iterators.pipeline import RowIterators, table_processing, table_rules_refusal
from tests.unit.iterators.reference import WIDE_AGGREGATIONS, WIDE_ARROW, WIDE_SCHEMA, split_batches

rows = st.fixed_dictionaries(
    {
        "id": st.sampled_from(["", "a", "b"]),
        "bucket": st.sampled_from([0, 1]),
        "tag": st.sampled_from([b"", b"\x00", b"\xff"]),
        "count": st.integers(-5, 5),
        "low": st.integers(-5, 5),
        "last": st.text(max_size=2),
        "first_blob": st.binary(max_size=2),
        "counts": st.just([]),
        "peaks": st.just([]),
    }
)


def _reference(drawn: list[dict[str, object]]) -> list[dict[str, object]]:
    out: dict[tuple[object, ...], dict[str, object]] = {}
    for row in drawn:  # sorted: the last row of each row key wins
        out[(row["id"], row["bucket"])] = row
    return list(out.values())


@settings(max_examples=200, deadline=None)
@given(drawn=st.lists(rows, max_size=40), cuts=st.lists(st.integers(0, 40), max_size=6))
def should_keep_last_row_of_each_row_key_across_batches(drawn: list[dict[str, object]], cuts: list[int]) -> None:
    # Given rows sorted by row keys then sort key, cut anywhere
    drawn.sort(key=lambda r: (r["id"], r["bucket"], r["tag"]))
    batch = pa.RecordBatch.from_pylist(drawn, schema=WIDE_ARROW)
    pieces = split_batches(batch, [c for c in cuts if c <= len(drawn)])

    # When
    out = list(RowProcessor(WIDE_SCHEMA, ProcessingConfig(upsert=True), 0).process(pieces))

    # Then
    got = [row for b in out for row in b.to_pylist()]
    assert got == _reference(drawn)
    assert all(b.num_rows for b in out)


def _properties(values: dict[str, str]) -> TableProperties:
    properties = TableProperties(InstanceProperties(), values)
    properties.set_schema(WIDE_SCHEMA)
    return properties


def should_read_upsert_into_table_processing_and_refuse_early_filtering() -> None:
    properties = _properties({"sleeper.table.upsert": "true"})

    iterators = RowIterators.for_table(properties, WIDE_SCHEMA)

    assert table_processing(properties, WIDE_SCHEMA).upsert
    assert not iterators.only_drops_rows
    assert not iterators.is_empty
    assert RowIterators.for_table(_properties({}), WIDE_SCHEMA).only_drops_rows


def should_refuse_upsert_with_aggregations() -> None:
    properties = _properties({"sleeper.table.upsert": "true", "sleeper.table.aggregations": WIDE_AGGREGATIONS})

    with pytest.raises(IteratorConfigError, match="cannot be set with sleeper.table.aggregations"):
        RowIterators.for_table(properties, WIDE_SCHEMA)


def should_refuse_upsert_with_an_iterator() -> None:
    properties = _properties(
        {"sleeper.table.upsert": "true", "sleeper.table.iterator.class.name": "sleeper.core.iterator.AgeOffIterator"}
    )

    with pytest.raises(IteratorConfigError, match="cannot be set with sleeper.table.iterator.class.name"):
        RowIterators.for_table(properties, WIDE_SCHEMA)


def should_name_upsert_among_the_rules_a_file_reader_cannot_apply() -> None:
    refusal = table_rules_refusal(_properties({"sleeper.table.upsert": "true"}), "an Iceberg reader")

    assert refusal is not None and "sleeper.table.upsert" in refusal
    assert table_rules_refusal(_properties({"sleeper.table.upsert": "false"})) is None


def should_hide_the_rows_of_every_key_set_delete_as_pyarrow_does() -> None:
    # Given key-set deletes on an int column (tested as one sorted set) beside another delete, and nulls in a value
    from sleeper.core.schema import Field, PrimitiveType, Schema
    from sleeper.iterators.pipeline import DeletedRows

    schema = Schema.of(
        row_keys=[Field("key", PrimitiveType.LONG)],
        values=[Field("n", PrimitiveType.INT, nullable=True), Field("s", PrimitiveType.STRING)],
    )
    batch = pa.RecordBatch.from_pydict(
        {
            "key": pa.array(range(-5, 15), pa.int64()),
            "n": pa.array([None if i % 3 == 0 else i for i in range(20)], pa.int32()),
            "s": [f"s{i % 4}" for i in range(20)],
        }
    )
    hide = DeletedRows(["key in (1, 2, -5)", "key in (9, 1000)", "n in (4, 5)", "s in ('s3')"], schema)

    # When the rows are kept
    kept = hide.keep(batch).to_pydict()

    # Then they are those no filter matches (a null n matches nothing)
    import pyarrow.compute as pc

    matched = pc.field("key").isin([1, 2, -5, 9, 1000]) | pc.field("n").isin([4, 5]) | pc.field("s").isin(["s3"])
    expected = pa.Table.from_batches([batch]).filter(~pc.coalesce(matched, pa.scalar(False))).to_pydict()
    assert kept == expected
    assert len(kept["key"]) < batch.num_rows
