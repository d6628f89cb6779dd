"""Benchmark of publishing a local table as an Iceberg view (sleeper.iceberg.publisher).

A table with an int64 row key, split into 4 leaves, gets ``--files`` ingests of ``--rows-per-file`` rows each, spread
over the whole key space (so, as one_reference_per_leaf ingest writes them, each file is referenced from every leaf).

Figures (seconds, median of ``--repeats`` where repeated):

- first publish: the view created and every file registered from its footer;
- unchanged publish: the state read, files planned and the view compared, no snapshot made;
- publish after a compaction of one leaf: the leaf's references moved to new files, so every file becomes partial and
  is published as a trimmed copy (the worst case: every file is read and rewritten);
- baseline: a full Sleeper query of the same table (``Table.query``), in the same run.

Rows are checked: pyiceberg's scan of the view has the table's row count after each publish. The last line printed is
one JSON object with every figure.

Usage: ``.venv/bin/python benchmarks/iceberg_publish.py [--files 100] [--rows-per-file 10000] [--repeats 3]``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from sleeper.core.range import Region
from sleeper.core.schema import Field, PrimitiveType, Schema
from sleeper.core.statestore.references import FileReference
from sleeper.core.statestore.transactions.files import (
    AssignJobIdRequest,
    AssignJobIdsTransaction,
    ReplaceFileReferencesRequest,
    ReplaceFileReferencesTransaction,
)
from sleeper.iceberg.catalog import load_catalog
from sleeper.iceberg.publisher import publish_table
from sleeper.io.key_ranges import KeyBounds
from sleeper.io.parquet import SortedFileWriter
from sleeper.io.parquet_reader import read_sorted
from sleeper.runtime.local.instance import LocalInstance

SCHEMA = Schema(row_key_fields=(Field("key", PrimitiveType.LONG),), value_fields=(Field("value", PrimitiveType.LONG),))
SPLITS = [2_500_000_000, 5_000_000_000, 7_500_000_000]


def _timed(run: Any) -> tuple[float, Any]:
    start = time.perf_counter()
    result = run()
    return time.perf_counter() - start, result


def _compact_leaf(table: Any, leaf_id: str) -> None:
    """Moves every file's reference on one leaf to a new file of its rows there, as compactions of that leaf do."""
    store = table.state_store
    store.refresh()
    region = store.partition_tree().get(leaf_id).region
    bounds = [KeyBounds(n, r.canonical_min, r.canonical_max) for n, r in region.ranges.items()]
    for i, entry in enumerate(sorted(store.files(), key=lambda e: e.filename)):
        if leaf_id not in entry.references:
            continue
        rows = pa.Table.from_batches(list(read_sorted(entry.filename, SCHEMA, regions=[bounds])))
        job = f"bench-{i}"
        output = f"{table.data_prefix}/data/partition_{leaf_id}/{job}.parquet"
        with SortedFileWriter(output, SCHEMA) as writer:
            writer.write(rows)
        store.commit(
            AssignJobIdsTransaction(
                requests=(AssignJobIdRequest(job_id=job, partition_id=leaf_id, filenames=(entry.filename,)),)
            )
        )
        reference = FileReference(filename=output, partition_id=leaf_id, number_of_rows=rows.num_rows)
        store.commit(
            ReplaceFileReferencesTransaction(
                jobs=(ReplaceFileReferencesRequest(job_id=job, input_files=(entry.filename,), new_reference=reference),)
            )
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=100)
    parser.add_argument("--rows-per-file", type=int, default=10_000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    rng = np.random.default_rng(22)
    with tempfile.TemporaryDirectory() as directory:
        instance = LocalInstance.create(Path(directory) / "instance")
        table = instance.create_table(
            "bench", SCHEMA, split_points=SPLITS, properties={"sleeper.table.iceberg.name": "bench.rows"}
        )
        for _ in range(args.files):
            keys = np.sort(rng.integers(0, 10_000_000_000, args.rows_per_file, dtype=np.int64))
            table.ingest(pa.table({"key": keys, "value": keys // 7}))
        rows = args.files * args.rows_per_file
        catalog = load_catalog(instance.data_root, None)

        def view_rows() -> int:
            return int(catalog.load_table("bench.rows").scan().to_arrow().num_rows)

        first, result = _timed(lambda: publish_table(instance, table))
        assert result.changed and result.files == args.files and view_rows() == rows
        unchanged = statistics.median(_timed(lambda: publish_table(instance, table))[0] for _ in range(args.repeats))
        query = statistics.median(
            _timed(lambda: table.query(regions=[Region.whole(SCHEMA)]))[0] for _ in range(args.repeats)
        )
        leaf = table.state_store.partition_tree().leaf_for_key([0])
        _compact_leaf(table, leaf.id)
        after, result = _timed(lambda: publish_table(instance, table))
        assert result.trimmed_files == args.files and view_rows() == rows
    figures = {
        "files": args.files,
        "rows": rows,
        "first_publish_s": round(first, 3),
        "unchanged_publish_s": round(unchanged, 3),
        "publish_after_leaf_compaction_s": round(after, 3),
        "trimmed_files": args.files,
        "baseline_full_query_s": round(query, 3),
    }
    print(f"first publish of {args.files} files ({rows} rows): {first:.3f} s")
    print(f"unchanged publish: {unchanged:.3f} s (median of {args.repeats})")
    print(f"publish after a leaf compaction, {args.files} trimmed copies: {after:.3f} s")
    print(f"baseline, a full Sleeper query of the table: {query:.3f} s (median of {args.repeats})")
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
