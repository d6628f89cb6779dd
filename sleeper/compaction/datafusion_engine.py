"""The DataFusion compaction engine: Sleeper's own plan through DataFusion's Python bindings (optional).

Each input file is scanned as its own partition with its sort order declared (``file_sort_order``), the region is a
filter pushed into the scans (row groups outside it are pruned by their statistics), and the scans are unioned and
sorted by row keys then sort keys. Because every input declares that order, DataFusion plans a streaming
``SortPreservingMergeExec`` over the scans rather than a full sort, as Sleeper's Rust compaction does; a plan holding
a ``SortExec`` is refused. The merged batches stream back to Python, where the table's filters, aggregations and the
Parquet writer are applied as for the pyarrow engine.

The ``datafusion`` package is imported only when this engine runs. It reads local files only.

Memory (measured with datafusion 55 in ``benchmarks/compaction.py``): the process's peak RSS grows with the rows
merged, about 0.8 GB for 10 files of 1M rows and 1.2 GB for 10 files of 2M, and the memory stays held after the
stream and the session are dropped; the same happens when DataFusion writes the Parquet file itself, so it is not
this module's conversion to pyarrow. A memory pool (``RuntimeEnvBuilder.with_fair_spill_pool``) does not bound it,
since that memory is not reserved through the pool, and a pool small enough to matter fails the sort-preserving
merge ("Resources exhausted"). That is why the pyarrow merge is compaction's default engine
(:data:`sleeper.compaction.execution.DEFAULT_ENGINE`). Batches of 16k rows
(:attr:`sleeper.compaction.execution.ExecutionSettings.datafusion_batch_rows`) cost less CPU and memory than 64k.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator, Sequence
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from sleeper.compaction.exceptions import EngineUnavailableError
from sleeper.core.extras import install_command
from sleeper.core.schema import Schema
from sleeper.io.arrow_schema import arrow_schema
from sleeper.io.filesystem import filesystem_path
from sleeper.io.key_ranges import KeyBounds, normalise_regions
from sleeper.io.parquet_reader import check_no_unknown_columns

__all__ = ["DATAFUSION_MISSING", "datafusion_available", "datafusion_can_read", "datafusion_merge", "datafusion_plan"]

DATAFUSION_MISSING = (
    "the DATAFUSION data engine (sleeper.table.data.engine) needs the datafusion extra: "
    f"{install_command('datafusion')}; or set the engine to ARROW"
)
"""Why a table asking for DataFusion cannot be compacted when the package is not installed."""


def datafusion_available() -> bool:
    """Whether the ``datafusion`` package can be imported."""
    return importlib.util.find_spec("datafusion") is not None


def datafusion_can_read(locations: Sequence[str]) -> bool:
    """Whether every file is local (a path or a ``file://`` URI), the only files this engine reads."""
    return all(location.lower().startswith("file://") or "://" not in location for location in locations)


def _local_path(location: str) -> str:
    lowered = location.lower()
    if lowered.startswith("file://"):
        return filesystem_path(location)
    if "://" in lowered:
        raise EngineUnavailableError(f"the DataFusion engine reads local files only, not {location}")
    return location


def datafusion_plan(
    input_files: Sequence[str], schema: Schema, region: Sequence[KeyBounds] | None, *, batch_rows: int
) -> Any:
    """The DataFrame that merges the files within the region (see the module docstring).

    Raises:
        EngineUnavailableError: If ``datafusion`` is not installed, a file is not local, or the plan would sort.
    """
    try:
        import datafusion
    except ImportError as e:
        raise EngineUnavailableError(DATAFUSION_MISSING) from e
    from datafusion import col, lit

    paths = [_local_path(location) for location in input_files]
    for location, path in zip(input_files, paths, strict=True):
        check_no_unknown_columns(location, pq.read_schema(path).names, schema)
    target = arrow_schema(schema)
    config = (
        datafusion.SessionConfig(
            {
                "datafusion.execution.parquet.schema_force_view_types": "false",
                "datafusion.execution.parquet.binary_as_string": "false",
                "datafusion.execution.parquet.pushdown_filters": "false",
            }
        )
        .with_target_partitions(max(1, len(paths)))
        .with_repartition_file_scans(False)
        .with_repartition_sorts(True)
        .with_batch_size(batch_rows)
    )
    context = datafusion.SessionContext(config)
    order = [col(name).sort(ascending=True, nulls_first=True) for name in schema.key_names]
    frame = None
    for path in paths:
        scan = context.read_parquet(path, schema=target, file_sort_order=[order], skip_metadata=True)
        frame = scan if frame is None else frame.union(scan)
    assert frame is not None
    condition = _region_condition(region, schema, col, lit)
    if condition is not None:
        frame = frame.filter(condition)
    frame = frame.sort(*order).select(*[col(name) for name in target.names])
    plan = frame.execution_plan().display_indent()
    if "SortExec:" in plan:
        raise EngineUnavailableError(f"DataFusion planned a full sort rather than a merge:\n{plan}")
    return frame


def _region_condition(region: Sequence[KeyBounds] | None, schema: Schema, col: Any, lit: Any) -> Any:
    if region is None:
        return None
    normalised_regions = normalise_regions([region], schema)
    if not normalised_regions:
        return lit(False)
    condition = None
    for normalised in normalised_regions:
        for bound in normalised:
            for value, is_min in ((bound.lo, True), (bound.hi, False)):
                if value is None:
                    continue
                part = col(bound.name) >= lit(value) if is_min else col(bound.name) < lit(value)
                condition = part if condition is None else condition & part
    return condition


def datafusion_merge(
    input_files: Sequence[str], schema: Schema, region: Sequence[KeyBounds] | None, *, batch_rows: int
) -> Iterator[pa.RecordBatch]:
    """Merges sorted local files within a region with DataFusion, streaming the merged batches.

    Raises:
        EngineUnavailableError: If ``datafusion`` is not installed, a file is not local, or the plan would sort.
    """
    frame = datafusion_plan(input_files, schema, region, batch_rows=batch_rows)
    target = arrow_schema(schema)
    return _stream(frame, target)


def _stream(frame: Any, target: pa.Schema) -> Iterator[pa.RecordBatch]:
    for batch in frame.execute_stream():
        data = batch.to_pyarrow()
        if data.num_rows:
            if not data.schema.equals(target):
                data = pa.RecordBatch.from_arrays(data.columns, schema=target)
            yield data
