"""KeyOrderer's two ways of ordering codes against pyarrow's stable sort: the packed sort (row indices in the low bits
of the codes), and the stable sort of rows given as sorted runs (a merge round).

The packed cases make the codes too wide to keep whole beside the row indices, so that the lowest bits are dropped and
the columns they came from have to be sorted again where the shortened codes tie. The runs cases have keys that tie
within and across runs, and string codes that are not exact.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from sleeper.io.sort import KeyOrderer


def _reference(columns: list[pa.Array]) -> np.ndarray:
    names = [str(i) for i in range(len(columns))]
    table = pa.table(dict(zip(names, columns, strict=True)))
    return np.asarray(pc.sort_indices(table, sort_keys=[(n, "ascending") for n in names]).to_numpy())


def _strings(rng: np.random.Generator, n: int, prefix: str, alphabet: str, lengths: tuple[int, int]) -> pa.Array:
    return pa.array(
        [prefix + "".join(rng.choice(list(alphabet), int(rng.integers(lengths[0], lengths[1] + 1)))) for _ in range(n)]
    )


@pytest.mark.parametrize("seed", range(3))
def should_order_two_wide_integer_columns_whose_codes_lose_their_low_bits(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = 5000
    # 30 + 30 bits of codes and 13 bits of row index: the second column loses its 9 low bits.
    first = pa.array(rng.integers(0, 1 << 30, n) // 2**26 * 2**26, pa.int64())  # 16 distinct values: many ties
    # Values 2**24 apart and then spread over their 9 low bits: many agree on every bit but the lost ones.
    second = pa.array(rng.integers(-32, 32, n) * 2**24 + rng.integers(0, 512, n), pa.int64())
    columns = [first, second]

    assert np.array_equal(KeyOrderer().order(columns), _reference(columns))


@pytest.mark.parametrize("seed", range(3))
def should_order_strings_then_integers_when_the_string_codes_lose_bits(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = 4000
    # Strings sharing a prefix and then agreeing on their first bytes beyond it: the shortened codes tie often.
    keys = _strings(rng, n, "row-", "ab", (0, 10))
    numbers = pa.array(rng.integers(0, 3, n), pa.int32())
    columns = [keys, numbers]

    assert np.array_equal(KeyOrderer().order(columns), _reference(columns))


def should_order_equal_keys_in_their_input_order() -> None:
    n = 3000
    columns = [pa.array([7] * n, pa.int64()), pa.array(["same"] * n)]

    assert np.array_equal(KeyOrderer().order(columns), np.arange(n))


def should_order_sorted_runs_of_binary_keys_as_a_merge_does() -> None:
    rng = np.random.default_rng(9)
    runs = [
        sorted(bytes(rng.integers(0, 256, int(rng.integers(0, 12)), dtype=np.uint8)) for _ in range(700))
        for _ in range(6)
    ]
    column = pa.chunked_array([pa.array(run, pa.binary()) for run in runs])

    assert np.array_equal(KeyOrderer().order([column]), _reference([column.combine_chunks()]))


def _runs(rng: np.random.Generator, runs: int, make: str) -> list[pa.Table]:
    tables = []
    for _ in range(runs):
        n = int(rng.integers(0, 400))
        second = pa.array(rng.integers(0, 3, n))
        if make == "int":
            table = pa.table({"k": pa.array(rng.integers(-50, 50, n), pa.int64()), "s": second})
        else:  # strings sharing a long prefix, agreeing beyond 8 bytes after it: codes tie without being exact
            table = pa.table({"k": _strings(rng, n, "row-", "ab", (0, 12)).cast(pa.string()), "s": second})
        tables.append(table.sort_by([("k", "ascending"), ("s", "ascending")]))
    return tables


@pytest.mark.parametrize("make", ["int", "string", "one int column"])
@pytest.mark.parametrize("runs", [2, 3, 11, 300])
def should_order_sorted_runs_as_a_stable_sort_does(make: str, runs: int) -> None:
    # Given rows that are several runs, each sorted by the keys, one after another (300 runs: more than the stable
    # sort is used for); one int column: negative values and many ties, ordered by their values without codes
    rng = np.random.default_rng(runs)
    tables = _runs(rng, runs, "int" if make == "one int column" else make)
    names = ("k",) if make == "one int column" else ("k", "s")
    columns = [pa.chunked_array([t.column(name).combine_chunks() for t in tables]) for name in names]
    # When they are ordered as a merge round orders them
    order = KeyOrderer().order(columns, sorted_runs=runs)
    # Then the order is the stable sort's: equal keys keep their run, then their place in it
    assert np.array_equal(order, _reference([c.combine_chunks() for c in columns]))
