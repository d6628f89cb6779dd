"""Benchmark of reading a column added after the files were written (nulls made at read time) beside the same rows in
files that hold the column (all nulls), and of the schema change and truncate themselves.

Two local tables hold the same rows (an int64 row key, an int64 ``value`` and a 30-letter ``payload``, 4 leaves, one
file per leaf): ``added`` was written without a column ``score`` that is then added (``add_column``, DoubleType), so
its files lack it and every read makes it as nulls; ``baseline`` was created with ``score`` and written with it, all
null, so its files hold it. Figures:

- ``scan``: a full ``Table.scan().to_arrow()`` of each, alternately; the ratio is the median of the repetitions'
  ratios of seconds (added / baseline: above 1, reading an added column costs more than reading it from the files).
- ``point``: 200 exact-key scans (the page read path) of each, the same ratio.
- ``add_column_ms`` and ``truncate_ms``: one ``add_column`` and one ``truncate`` of ``added`` (after the scans).

The two scans are checked to return equal rows. The last line printed is one JSON object with every figure.

Usage: ``.venv/bin/python benchmarks/added_column.py [--rows 2000000] [--repeats 5]``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import sleeper  # noqa: E402
from sleeper.api.schema_change import add_column, truncate  # noqa: E402
from sleeper.core.schema import Field, PrimitiveType, Schema, ValueType  # noqa: E402

KEYS = [Field("key", PrimitiveType.LONG)]
VALUES = [Field("value", PrimitiveType.LONG), Field("payload", PrimitiveType.STRING)]
SCORE = Field("score", ValueType.DOUBLE, nullable=True)
KEY_SPACE = 10_000_000_000
SPLITS = [KEY_SPACE // 4, KEY_SPACE // 2, 3 * KEY_SPACE // 4]


def _data(rows: int, seed: int) -> pa.Table:
    rng = np.random.default_rng(seed)
    letters = np.frombuffer(b"abcdefghijklmnopqrstuvwxyz", dtype=np.uint8)
    payload = letters[rng.integers(0, 26, rows * 30)].tobytes()
    offsets = pa.array(np.arange(0, rows * 30 + 1, 30, dtype=np.int32))
    strings = pa.StringArray.from_buffers(rows, offsets.buffers()[1], pa.py_buffer(payload))
    return pa.table(
        {"key": rng.integers(0, KEY_SPACE, rows), "value": rng.integers(0, 1_000_000, rows), "payload": strings}
    )


def _ratio(added: Callable[[], Any], baseline: Callable[[], Any], repeats: int) -> dict[str, float]:
    ratios, added_s, baseline_s = [], [], []
    for _ in range(repeats):
        start = time.perf_counter()
        added()
        middle = time.perf_counter()
        baseline()
        end = time.perf_counter()
        added_s.append(middle - start)
        baseline_s.append(end - middle)
        ratios.append((middle - start) / (end - middle))
    return {
        "added_seconds": round(statistics.median(added_s), 4),
        "baseline_seconds": round(statistics.median(baseline_s), 4),
        "ratio": round(statistics.median(ratios), 3),
    }


def run(rows: int, repeats: int, seed: int) -> dict[str, Any]:
    data = _data(rows, seed)
    with tempfile.TemporaryDirectory() as directory:
        instance = sleeper.connect(Path(directory) / "instance", create=True)
        added = instance.create_table("added", Schema.of(row_keys=KEYS, values=VALUES), split_points=SPLITS)
        added.ingest(data)
        start = time.perf_counter()
        added = add_column(added, SCORE.name, SCORE.type)
        add_ms = (time.perf_counter() - start) * 1000
        baseline = instance.create_table(
            "baseline", Schema.of(row_keys=KEYS, values=[*VALUES, SCORE]), split_points=SPLITS
        )
        baseline.ingest(data.append_column(pa.field("score", pa.float64()), pa.nulls(rows, pa.float64())))
        got, expected = added.scan().to_arrow(), baseline.scan().to_arrow()
        assert got.equals(expected), "the added column's scan differs from the baseline's"
        keys = [[int(k)] for k in np.random.default_rng(seed + 1).choice(data.column("key").to_numpy(), 200)]
        scan = _ratio(lambda: added.scan().to_arrow(), lambda: baseline.scan().to_arrow(), repeats)
        point = _ratio(
            lambda: [added.scan(keys=[k]).to_arrow() for k in keys],
            lambda: [baseline.scan(keys=[k]).to_arrow() for k in keys],
            repeats,
        )
        start = time.perf_counter()
        truncate(added)
        truncate_ms = (time.perf_counter() - start) * 1000
    return {
        "benchmark": "added_column",
        "rows": rows,
        "repeats": repeats,
        "scan": scan,
        "point": point,
        "add_column_ms": round(add_ms, 1),
        "truncate_ms": round(truncate_ms, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=2_000_000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--seed", type=int, default=36)
    args = parser.parse_args()
    result = run(args.rows, args.repeats, args.seed)
    print(f"full scan: added {result['scan']['added_seconds']} s, baseline {result['scan']['baseline_seconds']} s")
    print(
        f"200 point scans: added {result['point']['added_seconds']} s, baseline {result['point']['baseline_seconds']} s"
    )
    print(json.dumps(result))


if __name__ == "__main__":
    main()
