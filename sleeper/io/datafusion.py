"""DataFusion access shared by the engines that read a table's files with it (compaction's
:mod:`sleeper.compaction.datafusion_engine` and queries' :mod:`sleeper.query.datafusion_read`): whether it is installed
and can read a location, the session both merge in, S3 buckets registered as object stores, key regions as DataFusion
conditions, and the cut of a job's first key column into ranges of about so many rows (at row group boundaries), by
which both split large merges between worker processes.

The ``datafusion`` package is imported only when a session is made or a store registered.
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Sequence
from typing import Any

import pyarrow.parquet as pq

from sleeper.core import INT_MIN, LONG_MIN, PrimitiveType, Schema, install_command
from sleeper.io.exceptions import EngineUnavailableError
from sleeper.io.filesystem import S3_SCHEMES, FileSystemOptions, S3Options, filesystem_path, resolve
from sleeper.io.key_ranges import KeyBounds, normalise_regions

__all__ = [
    "DATAFUSION_MISSING",
    "INPUT_COLUMN",
    "PACKAGE_ROOT",
    "datafusion_available",
    "datafusion_can_read",
    "datafusion_location",
    "key_range_chunks",
    "merge_session",
    "range_bound",
    "region_condition",
    "register_s3",
]

DATAFUSION_MISSING = (
    "the DATAFUSION data engine (sleeper.table.data.engine) needs the datafusion extra: "
    f"{install_command('datafusion')}; or set the engine to ARROW"
)
"""Why a table asking for DataFusion cannot be compacted when the package is not installed."""


INPUT_COLUMN = "__sleeper_input"
"""The column a merge plan adds holding each row's input position (0 for the first file), which breaks ties of equal
keys in input order."""


def datafusion_available() -> bool:
    """Whether the ``datafusion`` package can be imported."""
    return importlib.util.find_spec("datafusion") is not None


def _scheme(location: str) -> str:
    head, sep, _ = location.partition("://")
    return head.lower() if sep else ""


def datafusion_can_read(locations: Sequence[str]) -> bool:
    """Whether every file is one this engine reads: local (a path or a ``file://`` URI) or on S3."""
    return all(_scheme(location) in ("", "file", *S3_SCHEMES) for location in locations)


def datafusion_location(location: str) -> str:
    """The location as DataFusion names it: a local path, or ``s3://bucket/key``."""
    scheme = _scheme(location)
    if scheme in S3_SCHEMES:
        return "s3://" + filesystem_path(location)
    if scheme == "file":
        return filesystem_path(location)
    if scheme:
        raise EngineUnavailableError(f"the DataFusion engine reads local and S3 files only, not {location}")
    return location


def register_s3(context: Any, locations: Sequence[str], options: S3Options) -> None:
    """Registers with a DataFusion session an S3 object store for each bucket among the locations, reached with the
    given S3 options (region, credentials, an emulator's endpoint)."""
    from datafusion.object_store import AmazonS3

    endpoint = options.endpoint_override
    allow_http = options.scheme == "http"
    if endpoint is not None:
        if "://" not in endpoint:
            endpoint = f"{options.scheme}://{endpoint}"
        allow_http = endpoint.lower().startswith("http://")
    for bucket in sorted({filesystem_path(loc).split("/", 1)[0] for loc in locations if _scheme(loc) in S3_SCHEMES}):
        store = AmazonS3(
            bucket_name=bucket,
            region=options.region,
            access_key_id=options.access_key,
            secret_access_key=options.secret_key,
            session_token=options.session_token,
            endpoint=endpoint,
            allow_http=allow_http,
        )
        context.register_object_store("s3://", store, bucket)


def merge_session(inputs: int, batch_rows: int) -> Any:
    """A DataFusion session that merges ``inputs`` sorted scans (one partition each, never repartitioned, so a
    declared sort order holds and the plan merges rather than sorts) into batches of at most ``batch_rows``, reading
    strings as Arrow strings (not views) as the pyarrow engine gives them."""
    import datafusion

    config = (
        datafusion.SessionConfig(
            {
                "datafusion.execution.parquet.schema_force_view_types": "false",
                "datafusion.execution.parquet.binary_as_string": "false",
                "datafusion.execution.parquet.pushdown_filters": "false",
                "datafusion.optimizer.enable_round_robin_repartition": "false",
            }
        )
        .with_target_partitions(max(1, inputs))
        .with_repartition_file_scans(False)
        .with_repartition_sorts(True)
        .with_batch_size(batch_rows)
    )
    return datafusion.SessionContext(config)


def region_condition(region: Sequence[KeyBounds] | None, schema: Schema, col: Any, lit: Any) -> Any:
    """A DataFusion condition holding for rows in the region (None for no region; false for an empty one), built
    with DataFusion's ``col`` and ``lit``."""
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


def key_range_chunks(
    input_files: Sequence[str],
    schema: Schema,
    chunk_rows: int,
    *,
    options: FileSystemOptions | None = None,
) -> list[tuple[Any, Any]]:
    """Splits the first key column's values into disjoint ranges of about ``chunk_rows`` input rows each, in order.

    The cuts are at the smallest first-key values of row groups (from the files' footers), chosen so that the row
    groups starting in a range hold about ``chunk_rows`` rows; a range may hold more where many rows share a value.
    Files without statistics on the first key column give one range.

    Returns:
        The ranges as (inclusive minimum, exclusive maximum) pairs, None where unbounded: the first has no minimum,
        the last no maximum, and a single range ``(None, None)`` means no cut.
    """
    name = schema.key_names[0]
    starts: list[tuple[Any, int]] = []
    total = 0
    for location in input_files:
        fs, path = resolve(location, options)
        with fs.open_input_file(path) as source:
            metadata = pq.ParquetFile(source, pre_buffer=False).metadata
        index = metadata.schema.to_arrow_schema().get_field_index(name)
        for group in range(metadata.num_row_groups):
            row_group = metadata.row_group(group)
            total += row_group.num_rows
            if not row_group.num_rows:
                continue
            statistics = row_group.column(index).statistics if index >= 0 else None
            if statistics is None or not statistics.has_min_max:
                return [(None, None)]
            starts.append((statistics.min, row_group.num_rows))
    if total <= chunk_rows:
        return [(None, None)]
    starts.sort(key=lambda start: start[0])
    cuts: list[Any] = []
    rows = 0
    for value, count in starts:
        if rows >= chunk_rows and (not cuts or value > cuts[-1]):
            cuts.append(value)
            rows = 0
        rows += count
    edges = [None, *cuts, None]
    return list(zip(edges[:-1], edges[1:], strict=True))


def range_bound(schema: Schema, low: Any, high: Any) -> KeyBounds:
    """A key range on the first key column as a region bound (its type's smallest value where unbounded below)."""
    name = schema.key_names[0]
    if low is None:
        kind = schema.field(name).primitive_type
        low = {PrimitiveType.INT: INT_MIN, PrimitiveType.LONG: LONG_MIN, PrimitiveType.STRING: ""}.get(kind, b"")
    return KeyBounds(name, low, high)


PACKAGE_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
"""The directory holding this ``sleeper`` package (this module is ``sleeper/io/datafusion.py``)."""
