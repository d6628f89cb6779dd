"""The iterator contract: loading by dotted path or Sleeper's Java names, typed one-line errors, the guarded chain,
the built-in AGGREGATORS and age-off iterators and the shipped examples."""

from __future__ import annotations

import re
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from sleeper.core.schema import Field, PrimitiveType, Schema
from sleeper.iterators import ProcessingConfig
from sleeper.iterators.exceptions import IteratorConfigError, IteratorLoadError, IteratorRunError
from sleeper.iterators.pipeline import RowIterators
from sleeper.iterators.plugin import IteratorSpec, load_iterator

P = PrimitiveType
SCHEMA = Schema.of(
    row_keys=[Field("key", P.STRING)],
    values=[Field("count", P.LONG), Field("last_seen", P.LONG), Field("visibility", P.STRING, nullable=True)],
)
COUNTS = Schema.of(row_keys=[Field("key", P.STRING)], values=[Field("count", P.LONG), Field("last_seen", P.LONG)])


def _batch(keys: list[str], counts: list[int], seen: list[int], vis: list[str | None]) -> pa.RecordBatch:
    return pa.record_batch(
        {
            "key": pa.array(keys, pa.string()),
            "count": pa.array(counts, pa.int64()),
            "last_seen": pa.array(seen, pa.int64()),
            "visibility": pa.array(vis, pa.string()),
        }
    )


def _rows(batches: Iterator[pa.RecordBatch]) -> list[dict[str, object]]:
    return [row for batch in batches for row in batch.to_pylist()]


def _module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str, body: str) -> None:
    (tmp_path / f"{name}.py").write_text(textwrap.dedent(body))
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, name, raising=False)


@pytest.mark.parametrize(
    ("class_name", "reason"),
    [
        ("no_such_package.Iterator", "cannot import module 'no_such_package'"),
        ("sleeper.iterators.examples.NoSuchIterator", "has no class 'NoSuchIterator'"),
        ("os.path", "is not a class"),
        ("collections.OrderedDict", "lacks init, required_value_fields, apply"),
        ("NoDots", "expected a dotted path"),
        ("sleeper.example.iterator.SomethingElse", "cannot import module 'sleeper.example.iterator'"),
    ],
)
def should_refuse_a_class_that_cannot_be_an_iterator_in_one_line(class_name: str, reason: str) -> None:
    # Given a class name that does not name an iterator
    spec = IteratorSpec(class_name, "", "sleeper.table.iterator.class.name")
    # When it is loaded
    with pytest.raises(IteratorLoadError) as error:
        load_iterator(spec, SCHEMA)
    # Then the error names where it was set, the class and why, on one line
    message = str(error.value)
    assert message.startswith(f"sleeper.table.iterator.class.name {class_name!r}")
    assert reason in message
    assert "\n" not in message


def should_refuse_a_config_the_iterator_rejects() -> None:
    # Given the security iterator with a visibility field the table lacks
    spec = IteratorSpec("sleeper.iterators.examples.SecurityFilteringIterator", "nope,A", "queryTimeIteratorClassName")
    # When it is loaded
    with pytest.raises(IteratorLoadError, match=r"config 'nope,A' refused: .*'nope' is not a string field"):
        load_iterator(spec, SCHEMA)


def should_load_a_user_iterator_from_a_module_outside_the_package(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a module on the path defining an iterator that keeps even counts
    _module(
        tmp_path,
        monkeypatch,
        "user_even_iterator",
        """
        import pyarrow.compute as pc

        class EvenCounts:
            def init(self, config, schema):
                self.field = config or "count"
            def required_value_fields(self):
                return [self.field]
            def apply(self, batches):
                for batch in batches:
                    yield batch.filter(pc.equal(pc.bit_wise_and(batch.column(self.field), 1), 0))
        """,
    )
    # When it is loaded and applied with the query-time slot
    chain = RowIterators.build(SCHEMA, ProcessingConfig(), query_time=IteratorSpec("user_even_iterator.EvenCounts"))
    out = _rows(chain.apply([_batch(["a", "b", "c"], [1, 2, 4], [0, 0, 0], [None, None, None])]))
    # Then only the even counts are left, and the field it needs is read
    assert [r["key"] for r in out] == ["b", "c"]
    assert chain.required_value_fields() == ("count",)


def should_name_the_iterator_when_its_own_code_fails(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Given an iterator whose apply raises
    _module(
        tmp_path,
        monkeypatch,
        "user_broken_iterator",
        """
        class Broken:
            def init(self, config, schema): pass
            def required_value_fields(self): return []
            def apply(self, batches):
                for batch in batches:
                    raise RuntimeError("boom")
                    yield batch
        """,
    )
    chain = RowIterators.build(SCHEMA, ProcessingConfig(), table_iterator=IteratorSpec("user_broken_iterator.Broken"))
    # When it runs
    with pytest.raises(IteratorRunError, match=r"iterator 'user_broken_iterator.Broken' failed: RuntimeError: boom"):
        _rows(chain.apply([_batch(["a"], [1], [0], [None])]))


def should_pass_an_input_error_through_unchanged() -> None:
    # Given an input that fails while it is read
    def failing() -> Iterator[pa.RecordBatch]:
        yield _batch(["a"], [1], [0], [None])
        raise FileNotFoundError("data file gone")

    chain = RowIterators.build(
        SCHEMA,
        ProcessingConfig(),
        table_iterator=IteratorSpec("sleeper.iterators.examples.SecurityFilteringIterator", "visibility"),
    )
    # When the chain reads it, the reading error is raised as it is, not blamed on the iterator
    with pytest.raises(FileNotFoundError, match="data file gone"):
        _rows(chain.apply(failing()))


def should_refuse_output_out_of_key_order_where_rows_are_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given an iterator that reverses each batch
    _module(
        tmp_path,
        monkeypatch,
        "user_reversing_iterator",
        """
        import pyarrow as pa

        class Reverse:
            def init(self, config, schema): pass
            def required_value_fields(self): return []
            def apply(self, batches):
                for batch in batches:
                    yield batch.take(pa.array(range(batch.num_rows - 1, -1, -1)))
        """,
    )
    spec = IteratorSpec("user_reversing_iterator.Reverse")
    batch = _batch(["a", "b"], [1, 2], [0, 0], [None, None])
    # When it runs where rows are written, it fails; at query time its rows are returned
    with pytest.raises(IteratorRunError, match="must keep rows in key order"):
        _rows(RowIterators.build(SCHEMA, ProcessingConfig(), table_iterator=spec, writes=True).apply([batch]))
    assert [
        r["key"] for r in _rows(RowIterators.build(SCHEMA, ProcessingConfig(), table_iterator=spec).apply([batch]))
    ] == [
        "b",
        "a",
    ]


def should_refuse_output_with_other_columns_where_rows_are_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given an iterator that drops a column
    _module(
        tmp_path,
        monkeypatch,
        "user_dropping_iterator",
        """
        class Drop:
            def init(self, config, schema): pass
            def required_value_fields(self): return []
            def apply(self, batches):
                for batch in batches:
                    yield batch.drop_columns(["visibility"])
        """,
    )
    chain = RowIterators.build(
        SCHEMA, ProcessingConfig(), table_iterator=IteratorSpec("user_dropping_iterator.Drop"), writes=True
    )
    with pytest.raises(IteratorRunError, match="changed the columns of rows being written"):
        _rows(chain.apply([_batch(["a"], [1], [0], [None])]))


def _split(batch: pa.RecordBatch, size: int) -> list[pa.RecordBatch]:
    return [batch.slice(i, size) for i in range(0, batch.num_rows, size)]


def should_aggregate_as_the_table_aggregations_do_with_the_aggregators_config() -> None:
    # Given rows with repeated keys, split across batches
    batch = pa.record_batch(
        {
            "key": pa.array(["a", "a", "a", "b", "c", "c"], pa.string()),
            "count": pa.array([1, 2, 3, 4, 5, 6], pa.int64()),
            "last_seen": pa.array([10, 30, 20, 5, 7, 3], pa.int64()),
        }
    )
    aggregators = RowIterators.build(
        COUNTS, ProcessingConfig(), table_iterator=IteratorSpec("AGGREGATORS", ";,sum(count),max(last_seen)")
    )
    properties = RowIterators(COUNTS, ProcessingConfig.parse(None, "sum(count),max(last_seen)", COUNTS))
    # When both run over the same stream
    by_iterator = _rows(aggregators.apply(_split(batch, 2)))
    by_properties = _rows(properties.apply(_split(batch, 2)))
    # Then they give the same rows
    assert (
        by_iterator
        == by_properties
        == [
            {"key": "a", "count": 6, "last_seen": 30},
            {"key": "b", "count": 4, "last_seen": 5},
            {"key": "c", "count": 11, "last_seen": 7},
        ]
    )


@pytest.mark.parametrize(
    ("config", "reason"),
    [
        ("sum(count),max(last_seen)", "with one ';'"),
        ("other;,sum(count),max(last_seen)", "grouping fields ['other'] are not supported"),
        (";,sum(count)", "every value field needs an aggregation; missing: last_seen"),
        (";,sum(count),max(last_seen),avg x", "expected an aggregation op(field), got 'avg x'"),
        (";,sum(count),median(last_seen)", "unknown aggregation 'median'"),
        (";x,sum(count),max(last_seen)", "the filter slot after ';' must be empty"),
        (";ageoff='last_seen',soon,sum(count),max(last_seen)", "ageoff needs a whole number"),
    ],
)
def should_refuse_an_aggregators_config_it_cannot_honour(config: str, reason: str) -> None:
    with pytest.raises(IteratorLoadError, match=re.escape(reason)):
        load_iterator(IteratorSpec("aggregators", config, "sleeper.table.iterator.class.name"), COUNTS)


def should_age_off_with_the_aggregators_filter_and_the_java_age_off_iterator() -> None:
    # Given rows seen long ago and recently
    import time

    now = int(time.time() * 1000)
    batch = pa.record_batch(
        {
            "key": pa.array(["a", "b"], pa.string()),
            "count": pa.array([1, 2], pa.int64()),
            "last_seen": pa.array([now - 10 * 86_400_000, now], pa.int64()),
        }
    )
    for spec in (
        IteratorSpec("AGGREGATORS", ";ageoff='last_seen','86400000',sum(count),max(last_seen)"),
        IteratorSpec("sleeper.core.iterator.AgeOffIterator", "last_seen,86400000"),
    ):
        # When the iterator runs, then the old row is gone
        out = _rows(RowIterators.build(COUNTS, ProcessingConfig(), table_iterator=spec).apply([batch]))
        assert [r["key"] for r in out] == ["b"]


def should_map_the_java_example_names_to_the_python_examples() -> None:
    from sleeper.iterators import examples

    for java, python in (
        ("sleeper.example.iterator.AdditionIterator", examples.AdditionIterator),
        ("sleeper.example.iterator.FixedAgeOffIterator", examples.FixedAgeOffIterator),
        ("sleeper.example.iterator.SecurityFilteringIterator", examples.SecurityFilteringIterator),
    ):
        config = {"AdditionIterator": "", "FixedAgeOffIterator": "count,0"}.get(python.__name__, "visibility")
        assert isinstance(load_iterator(IteratorSpec(java, config), SCHEMA if "Security" in java else COUNTS), python)


def should_keep_only_rows_the_reader_is_authorised_for() -> None:
    # Given rows labelled A, B, C, empty and null
    batch = _batch(["a", "b", "c", "d", "e"], [1] * 5, [0] * 5, ["A", "B", "C", "", None])
    for config, expected in (
        ("visibility,A", ["a", "d", "e"]),
        ("visibility,A,B", ["a", "b", "d", "e"]),
        ("visibility", ["d", "e"]),
        ("visibility,A,B,C", ["a", "b", "c", "d", "e"]),
    ):
        iterator = load_iterator(IteratorSpec("sleeper.iterators.examples.SecurityFilteringIterator", config), SCHEMA)
        # When the security iterator runs with the reader's authorisations
        kept = _rows(iterator.apply(iter(_split(batch, 2))))
        # Then exactly the rows labelled with one of them, or unlabelled, are kept (a pyarrow reference filter)
        allowed = {"", *config.split(",")[1:]}
        labels = batch.column("visibility")
        reference = batch.filter(pc.or_kleene(pc.is_null(labels), pc.is_in(labels, pa.array(sorted(allowed)))))
        assert [r["key"] for r in kept] == expected == reference.column("key").to_pylist()


def should_sum_equal_keys_across_batches_with_the_addition_iterator() -> None:
    batch = pa.record_batch(
        {
            "key": pa.array(["a", "a", "b", "b", "b"], pa.string()),
            "count": pa.array([1, 2, 3, 4, 5], pa.int64()),
            "last_seen": pa.array([1, 1, 1, 1, 1], pa.int64()),
        }
    )
    iterator = load_iterator(IteratorSpec("sleeper.iterators.examples.AdditionIterator"), COUNTS)
    assert _rows(iterator.apply(iter(_split(batch, 2)))) == [
        {"key": "a", "count": 3, "last_seen": 2},
        {"key": "b", "count": 12, "last_seen": 3},
    ]
    with pytest.raises(IteratorLoadError, match="sums int or long value fields"):
        load_iterator(IteratorSpec("sleeper.iterators.examples.AdditionIterator"), SCHEMA)


def should_drop_rows_below_the_fixed_minimum_with_the_fixed_age_off_iterator() -> None:
    batch = pa.record_batch(
        {
            "key": pa.array(["a", "b", "c"], pa.string()),
            "count": pa.array([1, 2, 3], pa.int64()),
            "last_seen": pa.array([5, None, 100], pa.int64()),
        }
    )
    iterator = load_iterator(IteratorSpec("sleeper.iterators.examples.FixedAgeOffIterator", "last_seen,50"), COUNTS)
    assert [r["key"] for r in _rows(iterator.apply(iter([batch])))] == ["c"]
    for bad in ("last_seen", "last_seen,x", "key,1"):
        with pytest.raises(IteratorLoadError):
            load_iterator(IteratorSpec("sleeper.iterators.examples.FixedAgeOffIterator", bad), COUNTS)


def should_check_the_whole_table_configuration_in_one_place() -> None:
    # an IteratorLoadError is an IteratorConfigError, so filters, aggregations and iterators share one error type
    assert issubclass(IteratorLoadError, IteratorConfigError)
