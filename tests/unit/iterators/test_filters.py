"""The age-off filter applied to record batches."""

from __future__ import annotations

import pyarrow as pa
import pytest

from sleeper.core.schema import LONG_MAX, LONG_MIN, Field, PrimitiveType, Schema
from sleeper.iterators import FilterConfig, IteratorDataError, ProcessingConfig
from sleeper.iterators.apply import RowProcessor, apply_filters
from tests.unit.iterators.reference import reference_age_off

P = PrimitiveType
SCHEMA = Schema.of(
    row_keys=[Field("key", P.STRING)], values=[Field("time", P.LONG, nullable=True), Field("seen", P.LONG)]
)
ARROW_SCHEMA = pa.schema([("key", pa.string()), ("time", pa.int64()), ("seen", pa.int64(), False)])


def _batch(times: list[int | None], seen: list[int] | None = None) -> pa.RecordBatch:
    keys = [f"k{i:03}" for i in range(len(times))]
    return pa.record_batch([keys, times, seen if seen is not None else [0] * len(times)], schema=ARROW_SCHEMA)


def _age_off(field: str, max_age_ms: int) -> ProcessingConfig:
    return ProcessingConfig(filters=(FilterConfig(field=field, max_age_ms=max_age_ms),))


def should_drop_row_exactly_max_age_old_and_keep_younger_rows() -> None:
    # Given
    now = 10_000
    batch = _batch([now - 101, now - 100, now - 99, now, now + 5])

    # When
    result = apply_filters(batch, _age_off("time", 100), now)

    # Then
    assert result.column("time").to_pylist() == [now - 99, now, now + 5]
    assert result.to_pylist() == reference_age_off(batch.to_pylist(), [("time", 100)], now)


def should_drop_rows_with_null_timestamp() -> None:
    # Given
    batch = _batch([None, 5, None])

    # When
    result = apply_filters(batch, _age_off("time", 100), 10)

    # Then
    assert result.column("time").to_pylist() == [5]


def should_keep_only_rows_passing_every_filter() -> None:
    # Given
    now = 1_000
    batch = _batch([990, 990, 900, 900], seen=[999, 950, 999, 950])
    config = ProcessingConfig(
        filters=(FilterConfig(field="time", max_age_ms=50), FilterConfig(field="seen", max_age_ms=20))
    )

    # When
    result = apply_filters(batch, config, now)

    # Then
    assert result.column("key").to_pylist() == ["k000"]
    assert result.to_pylist() == reference_age_off(batch.to_pylist(), [("time", 50), ("seen", 20)], now)


def should_return_the_same_batch_when_every_row_is_kept() -> None:
    # Given
    batch = _batch([1, 2, 3])

    # When
    result = apply_filters(batch, _age_off("time", 1_000), 10)

    # Then
    assert result is batch


def should_return_the_same_batch_without_filters() -> None:
    # Given
    batch = _batch([None, 1])

    # When
    result = apply_filters(batch, ProcessingConfig(), 10)

    # Then
    assert result is batch


@pytest.mark.parametrize(
    ("now", "max_age", "times"),
    [
        (0, LONG_MAX, [LONG_MIN, LONG_MIN + 1, -1, 0, LONG_MAX]),
        (LONG_MAX, 1, [LONG_MIN, LONG_MAX - 1, LONG_MAX]),
        (LONG_MIN, -1, [LONG_MIN, LONG_MIN + 1, LONG_MAX]),
        (5, -3, [5, 8, 9, 100]),
        (5, 0, [4, 5, 6]),
    ],
)
def should_compare_without_overflow_at_the_extremes(now: int, max_age: int, times: list[int]) -> None:
    # Given
    batch = _batch([*times, None])

    # When
    result = apply_filters(batch, _age_off("time", max_age), now)

    # Then
    assert result.to_pylist() == reference_age_off(batch.to_pylist(), [("time", max_age)], now)


def should_filter_a_sliced_batch() -> None:
    # Given
    batch = _batch([1, 50, 100, 150, None, 200]).slice(1, 4)

    # When
    result = apply_filters(batch, _age_off("time", 100), 200)

    # Then
    assert result.column("time").to_pylist() == [150]


def should_fail_when_the_filtered_column_is_missing() -> None:
    # Given
    batch = _batch([1]).drop_columns(["time"])

    # When / Then
    with pytest.raises(IteratorDataError, match="no column 'time'"):
        apply_filters(batch, _age_off("time", 10), 5)


def should_fail_when_the_filtered_column_is_not_int64() -> None:
    # Given
    batch = pa.record_batch({"key": ["a"], "time": pa.array([1], pa.int32())})

    # When / Then
    with pytest.raises(IteratorDataError, match="must be an int64 column, found int32"):
        apply_filters(batch, _age_off("time", 10), 5)


def should_filter_a_stream_dropping_emptied_batches() -> None:
    # Given
    now = 1_000
    batches = [_batch([1, 2]), _batch([999, 10, 998]), _batch([])]
    processor = RowProcessor(SCHEMA, ProcessingConfig.parse("ageOff(time,100)", None, SCHEMA), now)

    # When
    out = list(processor.process(batches))

    # Then
    assert [b.column("time").to_pylist() for b in out] == [[999, 998]]
