"""Running a compaction job: merge the job's sorted input files into one sorted output file.

:func:`run_compaction` reads each input file limited to the region of the job's partition (a file on a parent
partition is shared between its children, and each child's job takes only its own rows), with row groups outside the
region skipped by their statistics and files opened with ``pre_buffer=False``. The inputs are merged by row keys then
sort keys in a bounded-memory streaming k-way merge (:func:`sleeper.io.merge.merge_sorted`), the table's filters,
aggregations and iterator are applied (:class:`sleeper.iterators.pipeline.RowIterators`, loaded before any file is
opened), and the rows are written through
:class:`sleeper.io.parquet.SortedFileWriter` with the table's Parquet settings: row groups of exactly the table's row
count, the ``.sketches`` sidecar, and encoding on a writer thread while the merge goes on.

The output is first written at a path of the run's own beside the job's output file
(``<jobId>.<runId>.staging.parquet``, with its ``.staging.sketches``), then published at the output file without
replacing a file there (:func:`sleeper.io.filesystem.publish_no_clobber`, sketches first). Another run of the same
job (a message delivered again while this run still went on, docs/reliability.md B3) may have published it first: that
file is a whole output of the same job, so this run's is discarded and the existing one is used (its row count read from
its footer); committing it then either lands or is recognised as already committed. So a run never rewrites, truncates
or deletes an output file another run may have committed, and a run that fails deletes only its own staging files (a
run that dies leaves them to the orphan sweeper: they are ``.parquet`` and ``.sketches`` files no transaction adds).

Memory depends on the number of inputs times the batch size, never on the number of rows. No row is handled in
Python: the merge, the region filter, the iterators and the writer all work on whole Arrow columns.

The table's ``sleeper.table.data.engine`` chooses how the merge runs: ``DATAFUSION``, if the table or its instance
sets it, uses Apache DataFusion's sort-preserving merge (:mod:`sleeper.compaction.datafusion_engine`) when the
``datafusion`` package is installed and every input file is local or on S3, in worker processes that each merge a key
range of about :attr:`ExecutionSettings.datafusion_chunk_rows` rows (which bounds the memory DataFusion keeps);
``ARROW`` and ``JAVA`` use the pyarrow merge. Left at the built-in default, compaction uses the pyarrow merge
(:data:`sleeper.io.data_engine.DEFAULT_ENGINE`, the rule queries follow too). Either way the iterators, sketches and
the writer are the same, so both engines write the same rows.

Beyond Sleeper, a table's pending row deletes (``sleeper.core.statestore.deletes``) that list an input file are read
from the state store, brought up to date, when the run starts: the rows of that input matching their filters are
dropped as it is read, before the merge (:class:`sleeper.iterators.pipeline.DeletedRows`, the hide queries apply),
and the result names the deletes applied, which the commit carries so the output joins none of them. Such a run
always uses the pyarrow merge.
"""

from __future__ import annotations

import dataclasses
import logging
import re
import time
import uuid
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import ExitStack
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import pyarrow as pa
from pyarrow import fs as pafs

from sleeper.compaction.exceptions import CompactionConfigError, CompactionInputError
from sleeper.core import Partition, Schema
from sleeper.core import Region as CoreRegion
from sleeper.core.jobs import CompactionJob
from sleeper.core.statestore import filters_by_file
from sleeper.io import (
    ENGINE_ARROW,
    ENGINE_DATAFUSION,
    FileSystemOptions,
    KeyBounds,
    ParquetSettings,
    RowCounter,
    SortedFileReader,
    SortedFileWriter,
    WrittenFile,
    check_no_unknown_columns,
    delete,
    exists,
    merge_sorted,
    publish_no_clobber,
    read_file_metadata,
    resolve,
    resolve_engine,
    size,
    sketches_path,
)
from sleeper.iterators import (
    AGGREGATIONS_PROPERTY,
    FILTERS_PROPERTY,
    DeletedRows,
    IteratorSpec,
    ProcessingConfig,
    RowIterators,
    table_upserts,
)

if TYPE_CHECKING:
    from sleeper.core.properties import TableProperties
    from sleeper.statestore import SleeperTable

__all__ = [
    "CompactionResult",
    "ExecutionSettings",
    "compaction_batches",
    "partition_bounds",
    "iterators_for_job",
    "processing_for_job",
    "run_compaction",
    "staging_location",
]

_LOG = logging.getLogger(__name__)
_RUN_ID = re.compile(r"^[A-Za-z0-9_-]+$")


@dataclass(frozen=True, slots=True, kw_only=True)
class ExecutionSettings:
    """How a compaction runs. The defaults suit a task with two or more cores.

    Attributes:
        batch_rows: The most rows in a batch read from an input and in a merged batch. Memory grows with this times
            the number of inputs.
        prefetch_threads: Threads that read the next batch of each input ahead while the merge runs (pyarrow's
            Parquet decoding releases the GIL); 0 reads on the merging thread.
        decode_threads: Let pyarrow decode the columns of a batch on its own thread pool.
        writer_thread: Encode and write row groups on a background thread.
        pipeline: Assemble the merged batches of one round on a background thread while the next round is ordered
            (:func:`sleeper.io.merge.merge_sorted`); uses another core.
        datafusion_batch_rows: The batch size of the DataFusion engine (at most ``batch_rows``). Its
            sort-preserving merge runs faster and holds less memory with smaller batches than the pyarrow merge
            does (measured in ``benchmarks/compaction.py``: 16k rows beat 64k by about a quarter of the CPU time).
        datafusion_chunk_rows: The DataFusion engine merges key ranges of about this many input rows, each in a
            worker process of its own, since DataFusion keeps memory in proportion to the rows it reads
            (:mod:`sleeper.compaction.datafusion_engine`); a worker's memory grows with this, not with the job. None
            merges the whole job in this process.
    """

    batch_rows: int = 65536
    prefetch_threads: int = 1
    decode_threads: bool = False
    writer_thread: bool = True
    pipeline: bool = False
    datafusion_batch_rows: int = 16384
    datafusion_chunk_rows: int | None = 8_000_000

    def __post_init__(self) -> None:
        if self.batch_rows < 1:
            raise CompactionConfigError(f"batch_rows must be positive, got {self.batch_rows}")
        if self.datafusion_batch_rows < 1:
            raise CompactionConfigError(f"datafusion_batch_rows must be positive, got {self.datafusion_batch_rows}")
        if self.datafusion_chunk_rows is not None and self.datafusion_chunk_rows < 1:
            raise CompactionConfigError(f"datafusion_chunk_rows must be positive, got {self.datafusion_chunk_rows}")
        if self.prefetch_threads < 0:
            raise CompactionConfigError(f"prefetch_threads must not be negative, got {self.prefetch_threads}")


@dataclass(frozen=True, slots=True, kw_only=True)
class CompactionResult:
    """What a run of a compaction job did.

    Attributes:
        job_id: The job.
        rows_read: The rows of the inputs within the partition's region (before filters and aggregations).
        rows_written: The rows in the output file.
        output: The job's output file, with its sketches (their ``sketches`` are not read if another run published
            the file).
        engine: The engine that merged the inputs (``ARROW`` or ``DATAFUSION``).
        output_existed: Another run of the job had already published the output file; this run's was discarded and
            ``rows_written`` is the existing file's row count.
        applied_deletes: The transaction numbers of the pending row deletes whose rows were dropped from the inputs.
    """

    job_id: str
    rows_read: int
    rows_written: int
    output: WrittenFile
    engine: str
    output_existed: bool = False
    applied_deletes: tuple[int, ...] = ()


def processing_for_job(job: CompactionJob, properties: TableProperties, schema: Schema) -> ProcessingConfig:
    """The filters and aggregations a job applies: the job's own (copied from the table when the job was created),
    or the table's if the job carries neither; and, on an upsert table (``sleeper.table.upsert``), the rule that keeps
    the last row of each row key.

    Raises:
        IteratorConfigError: If the filters or aggregations do not suit the schema.
    """
    if job.filter_config is not None or job.aggregation_config is not None:
        config = ProcessingConfig.parse(job.filter_config, job.aggregation_config, schema)
    else:
        config = ProcessingConfig.parse(properties.get(FILTERS_PROPERTY), properties.get(AGGREGATIONS_PROPERTY), schema)
    return dataclasses.replace(config, upsert=table_upserts(properties)) if table_upserts(properties) else config


def iterators_for_job(
    job: CompactionJob, properties: TableProperties, schema: Schema, *, now_ms: int | None = None
) -> RowIterators:
    """Everything a job applies to its rows: its filters and aggregations (:func:`processing_for_job`), then its
    iterator (``iteratorClassName`` and ``iteratorConfig``, copied from the table's
    ``sleeper.table.iterator.class.name`` and ``.config`` when the job was created), loaded here.

    Raises:
        IteratorLoadError: If the job's iterator cannot be loaded or refuses its config; the run fails and the job is
            retried, then dead-lettered, as any failed job (see :mod:`sleeper.compaction.task`).
        IteratorConfigError: If the filters or aggregations do not suit the schema.
    """
    spec = IteratorSpec.optional(job.iterator_class_name, job.iterator_config, f"compaction job {job.job_id} iterator")
    return RowIterators.build(
        schema, processing_for_job(job, properties, schema), table_iterator=spec, now_ms=now_ms, writes=True
    )


def partition_bounds(region: CoreRegion) -> list[KeyBounds]:
    """A partition's region as the canonical key bounds a data file read takes (inclusive min, exclusive max)."""
    return [KeyBounds(name, r.canonical_min, r.canonical_max) for name, r in region.ranges.items()]


def run_compaction(
    job: CompactionJob,
    table: SleeperTable,
    *,
    partition: Partition | None = None,
    engine: str | None = None,
    now_ms: int | None = None,
    settings: ExecutionSettings | None = None,
    filesystem: pafs.FileSystem | None = None,
    options: FileSystemOptions | None = None,
    run_id: str | None = None,
) -> CompactionResult:
    """Merges a job's input files within its partition's region into its output file (with sketches).

    The output is written at :func:`staging_location`, then published at the job's output file unless a file is
    already there; such a file is a whole output of the same job, published by another run, and is kept and used
    (see the module docstring). If anything fails, this run's staging files are deleted; the output file is never
    replaced or deleted. Nothing is committed: see :mod:`sleeper.compaction.commit`.

    Args:
        job: The job.
        table: The job's table (schema, properties, state store).
        partition: The job's partition, if already known; otherwise read from the table's state store.
        engine: An engine name overriding the table's ``sleeper.table.data.engine``.
        now_ms: The time age-off filters measure from, in epoch milliseconds; now if omitted.
        settings: Batch sizes and threads.
        filesystem: A filesystem to read and write every file on instead of the one each URI names (tests).
        options: How to reach S3, and the conditional copy that publishes there.
        run_id: The run, naming its staging files (letters, digits, ``-`` and ``_``); a new UUID if omitted.

    Returns:
        The rows read and written and the output file.

    Raises:
        CompactionInputError: If the job's partition does not exist.
        CompactionConfigError: If the engine is not supported, or the run id is not usable in a file name.
        IteratorLoadError: If the job's iterator cannot be loaded (before any file is opened).
        IteratorRunError: If the job's iterator fails or breaks its contract (what was written is deleted).
        MissingFileError: If an input file does not exist.
        DataFileError: If an input file is not readable Parquet.
        SchemaMismatchError: If an input file's columns do not match the schema.
    """
    schema = table.schema
    chosen = settings or ExecutionSettings()
    staging = staging_location(job.output_file, run_id if run_id is not None else str(uuid.uuid4()))
    if partition is None:
        partition = table.state_store.partitions_state().get(job.partition_id)
        if partition is None:
            raise CompactionInputError(f"job {job.job_id}: partition {job.partition_id} does not exist")
    elif partition.id != job.partition_id:
        raise CompactionInputError(f"job {job.job_id} is on partition {job.partition_id}, not {partition.id}")
    iterators = iterators_for_job(
        job, table.properties, schema, now_ms=now_ms if now_ms is not None else int(time.time() * 1000)
    )
    store = table.state_store
    store.refresh()
    deletes = [d for d in store.pending_deletes() if not d.files.isdisjoint(job.input_files)]
    hides = DeletedRows.by_file(filters_by_file(deletes, job.input_files), schema)
    engine_used = resolve_engine(table.properties, engine)
    if hides:
        engine_used = ENGINE_ARROW
    if engine_used == ENGINE_DATAFUSION:
        from sleeper.io import datafusion_can_read

        if filesystem is not None or not datafusion_can_read(job.input_files):
            engine_used = ENGINE_ARROW  # DataFusion reads the real local filesystem and S3 only
    counter = RowCounter()
    with ExitStack() as stack:
        merged = compaction_batches(
            job.input_files,
            schema,
            partition_bounds(partition.region),
            engine=engine_used,
            settings=chosen,
            filesystem=filesystem,
            options=options,
            stack=stack,
            hides=hides,
        )
        with SortedFileWriter(
            staging,
            schema,
            settings=ParquetSettings.from_table_properties(table.properties),
            filesystem=filesystem,
            options=options,
            writer_thread=chosen.writer_thread,
        ) as writer:
            for batch in iterators.apply(counter.count(merged)):
                writer.write(batch)
    output, existed = _publish(job, writer.result, schema, filesystem=filesystem, options=options)
    return CompactionResult(
        job_id=job.job_id,
        rows_read=counter.rows,
        rows_written=output.rows,
        output=output,
        engine=engine_used,
        output_existed=existed,
        applied_deletes=tuple(d.number for d in deletes),
    )


def staging_location(output_file: str, run_id: str) -> str:
    """Where a run writes a job's output before publishing it: beside the output file, with the run id before the
    extension, ``<dir>/<jobId>.<runId>.staging.parquet`` (its sketches ``<jobId>.<runId>.staging.sketches``).

    Raises:
        CompactionConfigError: If the run id holds anything but letters, digits, ``-`` and ``_``.
    """
    if not _RUN_ID.match(run_id):
        raise CompactionConfigError(f"run id {run_id!r} must be letters, digits, '-' and '_'")
    slash = output_file.rfind("/")
    dot = output_file.rfind(".")
    stem, extension = (output_file[:dot], output_file[dot:]) if dot > slash + 1 else (output_file, "")
    return f"{stem}.{run_id}.staging{extension}"


def _publish(
    job: CompactionJob,
    staged: WrittenFile,
    schema: Schema,
    *,
    filesystem: pafs.FileSystem | None,
    options: FileSystemOptions | None,
) -> tuple[WrittenFile, bool]:
    """Publishes a run's staged output at the job's output file, sketches first (a published data file always has its
    sketches beside it), or, if another run published the output first, discards the staged files and describes the
    existing output. Returns the output and whether it existed.

    The two publishes are separate: when two runs publish at once the sketches may come from one and the data from the
    other. Both merged the same inputs, so they describe the same rows (bar rows an age-off filter measured from a
    different time dropped).
    """
    fs, staging_path = resolve(staged.location, options, filesystem=filesystem)
    _, final_path = resolve(job.output_file, options, filesystem=filesystem)
    staging_sketches = sketches_path(staging_path)
    try:
        if staged.sketches_location is not None and not publish_no_clobber(
            fs, staging_sketches, sketches_path(final_path), options=options
        ):
            delete(fs, staging_sketches)
        if publish_no_clobber(fs, staging_path, final_path, options=options):
            final_sketches = sketches_path(job.output_file) if staged.sketches_location is not None else None
            return replace(staged, location=job.output_file, sketches_location=final_sketches), False
        delete(fs, staging_path)
    except BaseException:
        for path in (staging_path, staging_sketches):
            try:
                delete(fs, path)
            except OSError as e:  # the orphan sweeper removes it; the caller is told of the first error
                _LOG.warning("Left staging file %s for the orphan sweeper: %s", path, e)
        raise
    _LOG.info("Job %s: another run published its output %s first; using that file", job.job_id, job.output_file)
    existing = read_file_metadata(job.output_file, schema, filesystem=filesystem, options=options)
    sketches = sketches_path(job.output_file)
    return (
        WrittenFile(
            location=job.output_file,
            rows=existing.rows,
            size_bytes=size(fs, final_path),
            row_groups=existing.row_group_count,
            sketches_location=sketches if exists(fs, sketches_path(final_path)) else None,
        ),
        True,
    )


def compaction_batches(
    input_files: Sequence[str],
    schema: Schema,
    region: Sequence[KeyBounds] | None,
    *,
    engine: str = ENGINE_ARROW,
    settings: ExecutionSettings | None = None,
    filesystem: pafs.FileSystem | None = None,
    options: FileSystemOptions | None = None,
    stack: ExitStack,
    hides: Mapping[str, DeletedRows] | None = None,
) -> Iterator[pa.RecordBatch]:
    """The rows of sorted files within a region, merged into one sorted stream (no filters or aggregations).

    Args:
        input_files: The files, each sorted by row keys then sort keys.
        schema: The table schema.
        region: The bounds of the region to read; None reads whole files.
        engine: ``ARROW`` or ``DATAFUSION`` (see :func:`sleeper.io.data_engine.resolve_engine`).
        settings: Batch sizes and threads.
        filesystem: A filesystem to read every file on instead of the one each URI names (ARROW only).
        options: How to reach S3.
        stack: Where the open files are registered, to be closed when it exits.
        hides: The rows pending deletes hide, by input file: dropped as each file is read (ARROW only).

    Returns:
        Record batches with the schema's columns, sorted by row keys then sort keys, each of at most
        ``settings.batch_rows`` rows.
    """
    chosen = settings or ExecutionSettings()
    regions = None if region is None else [list(region)]
    if engine == ENGINE_DATAFUSION:
        from sleeper.compaction.datafusion_engine import datafusion_merge

        batch_rows = min(chosen.batch_rows, chosen.datafusion_batch_rows)
        fused = datafusion_merge(
            input_files, schema, region, batch_rows=batch_rows, options=options, chunk_rows=chosen.datafusion_chunk_rows
        )
        close = getattr(fused, "close", None)
        if callable(close):
            stack.callback(close)  # stops a worker process still merging
        return fused
    streams: list[Iterable[pa.RecordBatch]] = []
    for location in input_files:
        reader = stack.enter_context(SortedFileReader(location, schema, filesystem=filesystem, options=options))
        check_no_unknown_columns(location, reader.column_names, schema)
        batches = reader.read(regions, batch_size=chosen.batch_rows, use_threads=chosen.decode_threads)
        hide = None if hides is None else hides.get(location)
        streams.append(batches if hide is None else hide.apply(batches))
    merged = merge_sorted(
        streams,
        schema.key_names,
        batch_rows=chosen.batch_rows,
        prefetch_threads=min(chosen.prefetch_threads, len(streams)) if len(streams) > 1 else 0,
        pipeline=chosen.pipeline,
    )
    stack.callback(merged.close)
    return merged
