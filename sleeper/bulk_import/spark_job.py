"""The Spark job of bulk import: partition, sort and write the input as Sleeper data files.

The job follows Sleeper's default driver (``BulkImportDataframeLocalSortDriver``):

1. read the input Parquet files with Spark, keeping the table's columns with the table's types;
2. if the table has fewer leaves than ``sleeper.table.bulk.import.min.leaf.partitions``, sample the input's row keys
   and extend the partition tree first (:mod:`sleeper.bulk_import.presplit`, one EXTEND_PARTITION_TREE transaction,
   retried when another process changes the tree at the same time);
3. tag every row with its leaf partition, in the executors with Arrow (``mapInArrow`` and
   :class:`~sleeper.bulk_import.leaves.LeafTagger`);
4. repartition to exactly one Spark partition per leaf (by a key per leaf whose Spark hash lands in the leaf's own
   partition);
5. in the executors, sort each partition's rows by row keys then sort keys with this port's vectorised sort
   (:func:`sleeper.io.sort.sort_table`; past :data:`SORT_BUFFER_BYTES` sorted runs are spilled to local disk and
   merged with :func:`sleeper.io.merge.merge_sorted`, so memory stays bounded), and write them as one data file with
   its sketches, each leaf's rows passed through the table's filters, aggregations and iterator
   (:class:`~sleeper.iterators.pipeline.RowIterators`), with :class:`~sleeper.io.parquet.SortedFileWriter` through
   ``pyarrow.fs`` (so the files are the same as ingest's and compaction's, and no Hadoop S3 connector is needed to
   write), returning each file's metadata to the driver. Sorting in the Python worker rather than with Spark's
   ``sortWithinPartitions`` saves converting the rows back into the JVM and sorting them there: about a quarter of
   the job's time on 2 cores.

:func:`write_with_spark` does all of that and returns the file references; committing them is the caller's (see
:mod:`sleeper.bulk_import.runner`). PySpark is imported only when a job runs, so this package imports without it.

That is the ``local-sort`` algorithm. The ``dataframe-sort`` algorithm (:mod:`sleeper.core.jobs.bulk_import_algorithms`,
as Sleeper's ``BulkImportJobDataframeDriver``) replaces steps 4 and 5's sort: Spark sorts the tagged rows by leaf then
keys in the JVM (range partitioned into as many Spark partitions as there are leaves, so a leaf spanning two Spark
partitions is written as two files), and the executors write the sorted rows as they come. Each leaf gets the same
rows in the same key order either way.
"""

from __future__ import annotations

import itertools
import logging
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from sleeper.bulk_import.exceptions import BulkImportError, SparkUnavailableError
from sleeper.bulk_import.leaves import LeafTagger, spark_partition_keys
from sleeper.bulk_import.presplit import PreSplitSettings, plan_partition_tree_extension, sample_fraction
from sleeper.core import (
    Field,
    ListType,
    MapType,
    PartitionTree,
    PrimitiveType,
    Schema,
    TimestampType,
    ValueType,
    install_command,
    join_under,
)
from sleeper.core.jobs import BulkImportAlgorithm
from sleeper.core.statestore import FileReference, StateStoreError
from sleeper.io import (
    FileSystemOptions,
    ParquetSettings,
    SortedFileWriter,
    delete_unreferenced,
    merge_sorted,
    resolve,
    sketches_path,
    sort_table,
)
from sleeper.iterators import (
    IteratorSpec,
    ProcessingConfig,
    RowIterators,
    install_wheels,
    table_iterator_spec,
    table_processing,
    user_code_locations,
)

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from sleeper.core.properties import TableProperties
    from sleeper.statestore import StateStore

__all__ = [
    "LEAF_COLUMN",
    "SparkWriteResult",
    "active_spark_session",
    "delete_written",
    "extend_partition_tree",
    "read_input",
    "spark_session",
    "write_with_spark",
]

LEAF_COLUMN = "__sleeper_leaf"
"""The column holding each row's leaf index while the job runs."""

BUCKET_COLUMN = "__sleeper_bucket"
"""The column holding each row's shuffle key (one per leaf) while the job runs."""

ARROW_BATCH_ROWS = 65536
"""Rows per Arrow batch passed between Spark and the Python workers."""

SORT_BUFFER_BYTES = 128 * 1024 * 1024
"""How many bytes of a leaf's rows a Python worker sorts in memory before spilling a sorted run to local disk."""

_LOG4J_PROPERTIES = Path(__file__).with_name("log4j2.properties")
_LOG = logging.getLogger(__name__)


def _import_pyspark() -> Any:
    try:
        import pyspark.sql
    except ImportError as e:  # pragma: no cover - depends on the environment
        raise SparkUnavailableError(
            f"bulk import needs PySpark: install the spark extra ({install_command('spark')})"
        ) from e
    return pyspark.sql


def active_spark_session() -> SparkSession | None:
    """The Spark session this process (thread) already has, if any: a caller that makes one with
    :func:`spark_session` stops it when done only if there was none before, so it never stops a session another
    part of the process uses (``getOrCreate`` hands back that one).

    Raises:
        SparkUnavailableError: If PySpark is not installed.
    """
    session: SparkSession | None = _import_pyspark().SparkSession.getActiveSession()
    return session


def spark_session(
    *,
    master: str = "local[*]",
    app_name: str = "sleeper-bulk-import",
    driver_memory: str = "2g",
    shuffle_partitions: int = 8,
    conf: Mapping[str, str] | None = None,
) -> SparkSession:
    """A Spark session with settings that suit bulk import on one machine.

    The UI and console progress bars are off, logging is limited to errors, shuffles default to a few partitions
    (bulk import sets its own count per job), Arrow batches are large, and Python workers run this interpreter.

    Args:
        master: The Spark master; ``local[*]`` uses every core of this machine.
        app_name: The application name.
        driver_memory: The driver's JVM heap (in local mode the executors run inside the driver).
        shuffle_partitions: ``spark.sql.shuffle.partitions``.
        conf: More Spark settings, applied last.

    Raises:
        SparkUnavailableError: If PySpark is not installed.
    """
    sql = _import_pyspark()
    builder = (
        sql.SparkSession.builder.master(master)
        .appName(app_name)
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.driver.memory", driver_memory)
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.sql.shuffle.partitions", str(shuffle_partitions))
        .config("spark.sql.execution.arrow.maxRecordsPerBatch", str(ARROW_BATCH_ROWS))
        .config("spark.sql.execution.arrow.pyspark.enabled", "true")
        .config("spark.pyspark.python", sys.executable)
        .config("spark.pyspark.driver.python", sys.executable)
    )
    if _LOG4J_PROPERTIES.exists():
        builder = builder.config(
            "spark.driver.extraJavaOptions", f"-Dlog4j2.configurationFile=file:{_LOG4J_PROPERTIES}"
        )
    for key, value in (conf or {}).items():
        builder = builder.config(key, value)
    session: SparkSession = builder.getOrCreate()
    context = session.sparkContext
    context.setLogLevel("ERROR")
    # Python workers run the interpreter named when functions are shipped; make it this one (this venv).
    context.pythonExec = sys.executable
    return session


# ---------------------------------------------------------------------------------------------------------------
# Types
# ---------------------------------------------------------------------------------------------------------------


def _spark_primitive(sql_types: Any, primitive: PrimitiveType) -> Any:
    return {
        PrimitiveType.INT: sql_types.IntegerType(),
        PrimitiveType.LONG: sql_types.LongType(),
        PrimitiveType.STRING: sql_types.StringType(),
        PrimitiveType.BYTE_ARRAY: sql_types.BinaryType(),
    }[primitive]


def _spark_value_type(sql_types: Any, value_type: ValueType | TimestampType) -> Any:
    """The Spark type of a value type beyond Sleeper's: a timestamp with a time zone is Spark's ``TimestampType`` (an
    instant), one without ``TimestampNTZType``; Spark holds both in microseconds, which the leaf writer casts back to
    the field's unit exactly."""
    if isinstance(value_type, TimestampType):
        return sql_types.TimestampType() if value_type.time_zone is not None else sql_types.TimestampNTZType()
    return {
        ValueType.FLOAT: sql_types.FloatType(),
        ValueType.DOUBLE: sql_types.DoubleType(),
        ValueType.BOOLEAN: sql_types.BooleanType(),
        ValueType.DATE: sql_types.DateType(),
    }[value_type]


def _spark_type(sql_types: Any, f: Field) -> Any:
    if isinstance(f.type, PrimitiveType):
        return _spark_primitive(sql_types, f.type)
    if isinstance(f.type, ValueType | TimestampType):
        return _spark_value_type(sql_types, f.type)
    if isinstance(f.type, ListType):
        return sql_types.ArrayType(_spark_primitive(sql_types, f.type.element_type), containsNull=False)
    if isinstance(f.type, MapType):
        return sql_types.MapType(
            _spark_primitive(sql_types, f.type.key_type),
            _spark_primitive(sql_types, f.type.value_type),
            valueContainsNull=False,
        )
    raise TypeError(f"not a Sleeper field type: {f.type!r}")


def _quoted(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def spark_type_refusal(schema: Schema) -> str | None:
    """Why Spark cannot bulk import into a table of this schema, or None: Spark reads no Parquet timestamps of
    nanoseconds, so a ``TimestampType`` field of unit ``ns`` is refused (ingest takes them)."""
    nanos = [f.name for f in schema.value_fields if isinstance(f.type, TimestampType) and f.type.unit == "ns"]
    if not nanos:
        return None
    which = f"field {nanos[0]!r} is" if len(nanos) == 1 else f"fields {', '.join(map(repr, nanos))} are"
    return (
        f"Spark reads no Parquet timestamps of unit ns, and {which} of unit ns: "
        "ingest the files instead (sleeper ingest, Table.ingest)"
    )


def read_input(spark: SparkSession, schema: Schema, files: Sequence[str]) -> DataFrame:
    """The input files as a DataFrame of the table's columns, cast to the table's types.

    Raises:
        BulkImportError: If the table has a field Spark cannot read (:func:`spark_type_refusal`).
    """
    refusal = spark_type_refusal(schema)
    if refusal is not None:
        raise BulkImportError(refusal)
    functions = _import_pyspark().functions
    sql_types = _import_pyspark().types
    frame = spark.read.parquet(*files)
    return frame.select(
        *[functions.col(_quoted(f.name)).cast(_spark_type(sql_types, f)).alias(f.name) for f in schema.all_fields]
    )


# ---------------------------------------------------------------------------------------------------------------
# Pre-split
# ---------------------------------------------------------------------------------------------------------------


def extend_partition_tree(
    state_store: StateStore,
    schema: Schema,
    settings: PreSplitSettings,
    sample: pa.Table,
    *,
    total_rows: int,
) -> int:
    """Extends the partition tree to the minimum number of leaves, retrying when the tree changes meanwhile.

    Returns:
        How many partitions were added (0 if the tree already had enough leaves).

    Raises:
        InsufficientDataForSplittingError: If the sample cannot be split into enough leaves.
        StateStoreError: If every attempt to commit collided with another change of the tree.
    """
    for attempt in range(1, settings.attempts + 1):
        tree = state_store.partition_tree()
        transaction = plan_partition_tree_extension(schema, tree, sample, total_rows=total_rows, settings=settings)
        if transaction is None:
            return 0
        try:
            state_store.commit(transaction)
        except StateStoreError:
            if attempt == settings.attempts:
                raise
            _LOG.info("partition tree changed while extending it; trying again (attempt %d)", attempt + 1)
            state_store.refresh()
            continue
        return len(transaction.new_partitions)
    return 0  # pragma: no cover - the loop returns or raises


# ---------------------------------------------------------------------------------------------------------------
# The job
# ---------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class SparkWriteResult:
    """What the Spark job wrote.

    Attributes:
        references: One reference per file written, each the whole of one leaf's rows, in leaf order.
        rows_written: The rows in the files.
        partitions_added: Partitions added by extending the partition tree first (0 if it was not extended).
        seconds: Wall time of the Spark work, by phase (``presplit``, ``write``).
    """

    references: tuple[FileReference, ...]
    rows_written: int
    partitions_added: int = 0
    seconds: Mapping[str, float] = field(default_factory=dict)


_WRITTEN_SCHEMA = pa.schema(
    [
        pa.field("leaf", pa.int32()),
        pa.field("filename", pa.string()),
        pa.field("rows", pa.int64()),
        pa.field("size_bytes", pa.int64()),
    ]
)
_WRITTEN_DDL = "leaf int, filename string, rows long, size_bytes long"


def write_with_spark(
    spark: SparkSession,
    *,
    schema: Schema,
    properties: TableProperties,
    state_store: StateStore,
    data_prefix: str,
    files: Sequence[str],
    total_rows: int,
    options: FileSystemOptions | None = None,
    presplit: PreSplitSettings | None = None,
    sort_buffer_bytes: int = SORT_BUFFER_BYTES,
    algorithm: BulkImportAlgorithm = BulkImportAlgorithm.LOCAL_SORT,
) -> SparkWriteResult:
    """Reads the input with Spark and writes it as one sorted data file per leaf partition (not committed).

    Args:
        spark: The Spark session.
        schema: The table schema.
        properties: The table properties (Parquet settings, minimum leaves and splitting thresholds).
        state_store: The table's state store (the partition tree is read, and extended if it has too few leaves).
        data_prefix: The URI under which the table's files live; files go to
            ``<data_prefix>/data/partition_<id>/<uuid>.parquet`` with a ``.sketches`` file beside each.
        files: The input Parquet files, as paths or URIs Spark can read.
        total_rows: The rows in the input (from the files' footers), to size the sample for pre-splitting.
        options: How the executors reach S3 when writing.
        presplit: How to extend the partition tree; from the table properties if omitted.
        sort_buffer_bytes: How many bytes of rows each Python worker sorts in memory before spilling a sorted run.
        algorithm: How the rows are sorted: in the Python workers, one Spark partition per leaf (``local-sort``), or
            by Spark's DataFrame sort in the JVM (``dataframe-sort``).

    Returns:
        The references of the files written: one per leaf holding rows (``dataframe-sort``: one per leaf and Spark
        partition holding its rows).

    Raises:
        InsufficientDataForSplittingError: If the tree needs extending and the data does not allow it.
        IteratorConfigError: If the table's filters or aggregations are invalid, or its iterator cannot be loaded
            (``IteratorLoadError``, before Spark reads anything).
        BulkImportError: If Spark or a writer fails (files written by the job are deleted).
    """
    functions = _import_pyspark().functions
    processing = table_processing(properties, schema)
    iterator = table_iterator_spec(properties)
    user_code = user_code_locations(properties.instance_properties) if iterator is not None else []
    if user_code:
        install_wheels(user_code, options=options)
    RowIterators.build(schema, processing, table_iterator=iterator)  # fails here, before Spark, if it cannot load
    settings = presplit or PreSplitSettings.from_table_properties(properties)
    seconds: dict[str, float] = {}
    frame = read_input(spark, schema, files)
    partitions_added = 0
    if len(state_store.partition_tree().leaves) < settings.min_leaf_partitions:
        started = time.perf_counter()
        fraction = sample_fraction(total_rows, settings.min_leaf_partitions)
        keys = frame.select(*[_quoted(n) for n in schema.row_key_names])
        sampled = keys if fraction >= 1.0 else keys.sample(withReplacement=False, fraction=fraction, seed=17)
        sample = _to_arrow(sampled)
        partitions_added = extend_partition_tree(state_store, schema, settings, sample, total_rows=total_rows)
        seconds["presplit"] = time.perf_counter() - started
    started = time.perf_counter()
    tree = state_store.partition_tree()
    tagger = LeafTagger(schema, tree)
    bucket_keys = spark_partition_keys(tagger.leaf_count)
    sql_types = _import_pyspark().types
    tagged_schema = sql_types.StructType(
        [
            *frame.schema.fields,
            sql_types.StructField(LEAF_COLUMN, sql_types.IntegerType(), False),
            sql_types.StructField(BUCKET_COLUMN, sql_types.IntegerType(), False),
        ]
    )
    tagged = frame.mapInArrow(_TagLeaves(tagger, bucket_keys), tagged_schema)
    presorted = algorithm is BulkImportAlgorithm.DATAFRAME_SORT
    if presorted:
        by = [functions.col(LEAF_COLUMN), *(functions.col(_quoted(name)) for name in schema.key_names)]
        ordered = tagged.drop(BUCKET_COLUMN).repartitionByRange(tagger.leaf_count, *by).sortWithinPartitions(*by)
    else:
        ordered = tagged.repartition(tagger.leaf_count, functions.col(BUCKET_COLUMN))
    writer = _WriteLeafFiles(
        schema=schema,
        leaf_ids=[p.id for p in tagger.leaves],
        data_prefix=data_prefix.rstrip("/"),
        settings=ParquetSettings.from_table_properties(properties),
        options=options,
        sort_buffer_bytes=sort_buffer_bytes,
        processing=processing,
        iterator=iterator,
        user_code=user_code,
        presorted=presorted,
    )
    written = _to_arrow(ordered.mapInArrow(writer, _WRITTEN_DDL))
    seconds["write"] = time.perf_counter() - started
    references = _references(written, tagger, tree)
    return SparkWriteResult(
        references=references,
        rows_written=sum(r.number_of_rows for r in references),
        partitions_added=partitions_added,
        seconds=seconds,
    )


def _to_arrow(frame: DataFrame) -> pa.Table:
    if hasattr(type(frame), "toArrow"):
        return frame.toArrow()
    return pa.Table.from_batches(frame._collect_as_arrow())  # type: ignore[operator]  # PySpark 3.5


def _references(written: pa.Table, tagger: LeafTagger, tree: PartitionTree) -> tuple[FileReference, ...]:
    rows = sorted(written.to_pylist(), key=lambda r: (r["leaf"], r["filename"]))
    return tuple(
        FileReference(
            filename=r["filename"],
            partition_id=tagger.leaves[r["leaf"]].id,
            number_of_rows=r["rows"],
            only_contains_data_for_this_partition=True,
        )
        for r in rows
        if r["rows"] > 0
    )


def delete_written(
    references: Sequence[FileReference], data_prefix: str, options: FileSystemOptions | None = None
) -> None:
    """Deletes data files a job wrote for the table with this data prefix, and their sketches (when their commit was
    skipped or failed)."""
    for reference in references:
        fs, path = resolve(reference.filename, options)
        delete_unreferenced(fs, path, data_prefix)
        delete_unreferenced(fs, sketches_path(path), data_prefix)


class _TagLeaves:
    """The ``mapInArrow`` function adding each row's leaf index and shuffle key (runs in the executors)."""

    def __init__(self, tagger: LeafTagger, bucket_keys: np.ndarray) -> None:
        self._tagger = tagger
        self._bucket_keys = bucket_keys

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            leaves = self._tagger.tag(batch)
            yield pa.RecordBatch.from_arrays(
                [*batch.columns, pa.array(leaves, type=pa.int32()), pa.array(self._bucket_keys[leaves])],
                names=[*batch.schema.names, LEAF_COLUMN, BUCKET_COLUMN],
            )


class _WriteLeafFiles:
    """The ``mapInArrow`` function writing a partition's rows (sorted by leaf, then keys) to one file per leaf, each
    leaf's rows passed through the table's filters, aggregations and iterator (loaded in the executor)."""

    def __init__(
        self,
        *,
        schema: Schema,
        leaf_ids: Sequence[str],
        data_prefix: str,
        settings: ParquetSettings,
        options: FileSystemOptions | None,
        sort_buffer_bytes: int = SORT_BUFFER_BYTES,
        processing: ProcessingConfig | None = None,
        iterator: IteratorSpec | None = None,
        user_code: Sequence[str] = (),
        presorted: bool = False,
    ) -> None:
        self._schema = schema
        self._presorted = presorted
        self._processing = processing or ProcessingConfig()
        self._iterator = iterator
        self._user_code = list(user_code)
        self._leaf_ids = list(leaf_ids)
        self._prefix = data_prefix
        self._settings = settings
        self._options = options
        self._sort_buffer_bytes = sort_buffer_bytes
        self._sort_keys = [LEAF_COLUMN, *schema.key_names]

    def _open(self, leaf: int) -> SortedFileWriter:
        location = join_under(self._prefix, "data", f"partition_{self._leaf_ids[leaf]}", f"{uuid.uuid4()}.parquet")
        return SortedFileWriter(location, self._schema, settings=self._settings, options=self._options)

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        if self._presorted:  # Spark sorted them (dataframe-sort)
            yield from self._write(batches)
            return
        with tempfile.TemporaryDirectory(prefix="sleeper-bulk-import-") as spill_dir:
            yield from self._write(self._sorted(batches, Path(spill_dir)))

    def _sorted(self, batches: Iterator[pa.RecordBatch], spill_dir: Path) -> Iterator[pa.RecordBatch]:
        """The partition's rows sorted by leaf then keys: sorted in memory, spilling sorted runs past the buffer."""
        pending: list[pa.RecordBatch] = []
        pending_bytes = 0
        runs: list[Path] = []
        for batch in batches:
            if batch.num_rows == 0:
                continue
            pending.append(batch.drop_columns([BUCKET_COLUMN]))
            pending_bytes += batch.nbytes
            if pending_bytes >= self._sort_buffer_bytes:
                runs.append(_spill(sort_table(pa.Table.from_batches(pending), self._sort_keys), spill_dir, len(runs)))
                pending, pending_bytes = [], 0
        last = (
            sort_table(pa.Table.from_batches(pending), self._sort_keys).to_batches(ARROW_BATCH_ROWS) if pending else []
        )
        if not runs:
            yield from last
            return
        yield from merge_sorted([*(_read_run(run) for run in runs), last], self._sort_keys)

    def _write(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        if self._user_code:  # an executor may be another machine than the driver: install the iterator's code here
            install_wheels(self._user_code, options=self._options)
        iterators = RowIterators.build(self._schema, self._processing, table_iterator=self._iterator, writes=True)
        writer: SortedFileWriter | None = None
        closed: list[str] = []
        try:
            for leaf, pieces in itertools.groupby(_leaf_pieces(batches), key=lambda piece: piece[0]):
                for batch in iterators.apply(piece for _, piece in pieces):
                    if batch.num_rows == 0:
                        continue
                    if writer is None:
                        writer = self._open(leaf)
                    writer.write(batch)
                if writer is not None:
                    closed.append(writer.location)
                    yield self._metadata(leaf, writer)
                    writer = None
        except BaseException:
            if writer is not None:
                writer.abort()
            for location in closed:
                fs, path = resolve(location, self._options)
                delete_unreferenced(fs, path, self._prefix)
                delete_unreferenced(fs, sketches_path(path), self._prefix)
            raise

    def _metadata(self, leaf: int, writer: SortedFileWriter) -> pa.RecordBatch:
        written = writer.close()
        return pa.RecordBatch.from_arrays(
            [
                pa.array([leaf], type=pa.int32()),
                pa.array([written.location], type=pa.string()),
                pa.array([written.rows], type=pa.int64()),
                pa.array([written.size_bytes], type=pa.int64()),
            ],
            schema=_WRITTEN_SCHEMA,
        )


def _leaf_pieces(batches: Iterator[pa.RecordBatch]) -> Iterator[tuple[int, pa.RecordBatch]]:
    """Cuts batches sorted by leaf at the leaf boundaries: each piece with its leaf, without the leaf column."""
    for batch in batches:
        if batch.num_rows == 0:
            continue
        leaves = batch.column(LEAF_COLUMN).to_numpy(zero_copy_only=False)
        rows = batch.drop_columns([LEAF_COLUMN])
        starts = [0, *(np.flatnonzero(leaves[1:] != leaves[:-1]) + 1).tolist()]
        ends = [*starts[1:], batch.num_rows]
        for start, end in zip(starts, ends, strict=True):
            yield int(leaves[start]), rows.slice(start, end - start)


def _spill(table: pa.Table, directory: Path, number: int) -> Path:
    path = directory / f"run-{number:06d}.arrow"
    with pa.OSFile(str(path), "wb") as sink, pa.ipc.new_file(sink, table.schema) as writer:
        for batch in table.to_batches(ARROW_BATCH_ROWS):
            writer.write_batch(batch)
    return path


def _read_run(path: Path) -> Iterator[pa.RecordBatch]:
    with pa.memory_map(str(path), "r") as source:
        reader = pa.ipc.open_file(source)
        for i in range(reader.num_record_batches):
            yield reader.get_batch(i)
