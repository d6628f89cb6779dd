"""Instance properties giving the defaults of table properties (``sleeper.default.table.…``).

A few such defaults live with their feature instead (compaction, partition splitting, garbage collection, query and
bulk import), as in Sleeper.
"""

from __future__ import annotations

from sleeper.core.properties.definitions import InstancePropertyGroup, PropertyList
from sleeper.core.properties.validation import (
    BOOLEAN,
    BYTE_SIZE,
    NON_EMPTY,
    NON_NEGATIVE_INT,
    POSITIVE_INT,
    ChoiceValue,
    IntegerValue,
)

_defaults = PropertyList(InstancePropertyGroup.TABLE_PROPERTY_DEFAULTS)

COMPRESSION_CODECS = ("uncompressed", "snappy", "gzip", "lzo", "brotli", "lz4", "zstd")
PARQUET_WRITER_VERSIONS = ("v1", "v2")
INGEST_FILE_WRITING_STRATEGIES = ("one_file_per_leaf", "one_reference_per_leaf")
INGEST_ROW_BATCH_TYPES = ("arraylist", "arrow")
INGEST_PARTITION_FILE_WRITER_TYPES = ("direct", "async")
SNAPSHOT_BATCH_SIZE = IntegerValue(
    minimum=1, note="Sleeper writes each element in a record batch of its own for 0: set 1 for that"
)
"""The elements in one Arrow record batch of a snapshot. Sleeper also accepts 0, which it treats as 1; this port's
snapshot writer needs at least 1, so 0 is refused with that advice rather than breaking every snapshot."""
INGEST_QUEUES = (
    "standard_ingest",
    "bulk_import_emr",
    "bulk_import_persistent_emr",
    "bulk_import_eks",
    "bulk_import_emr_serverless",
)
"""The queues the ingest batcher can send jobs to (Sleeper's ``IngestQueue``)."""
ASYNC_COMMIT_BEHAVIOURS = ("DISABLED", "PER_IMPLEMENTATION", "ALL_IMPLEMENTATIONS")
DATA_ENGINES = ("DATAFUSION", "JAVA", "DATAFUSION_EXPERIMENTAL", "ARROW")
"""Sleeper's data engines plus ``ARROW``, this port's pyarrow engine."""

DEFAULT_PARQUET_QUERY_COLUMN_INDEX_ENABLED = _defaults.user(
    "sleeper.default.table.query.parquet.column.index.enabled",
    "The default for `sleeper.table.query.parquet.column.index.enabled`: whether queries read Parquet page indexes "
    "(column and offset indexes) to skip pages.",
    default="false",
    validation=BOOLEAN,
    not_used="queries skip row groups by their statistics; pyarrow's reader does not use page indexes",
)
DEFAULT_ROW_GROUP_SIZE = _defaults.user(
    "sleeper.default.table.parquet.rowgroup.size",
    "The default for `sleeper.table.parquet.rowgroup.size`: the most bytes in a Parquet row group (8 MiB).",
    default="8388608",
    validation=POSITIVE_INT,
)
DEFAULT_PAGE_SIZE = _defaults.user(
    "sleeper.default.table.parquet.page.size",
    "The default for `sleeper.table.parquet.page.size`: the size in bytes of Parquet pages (128 KiB).",
    default="131072",
    validation=POSITIVE_INT,
)
DEFAULT_COMPRESSION_CODEC = _defaults.user(
    "sleeper.default.table.parquet.compression.codec",
    "The default for `sleeper.table.parquet.compression.codec`: the compression codec of Parquet files. Valid "
    "values: " + ", ".join(COMPRESSION_CODECS) + ".",
    default="zstd",
    validation=ChoiceValue(COMPRESSION_CODECS),
)
DEFAULT_DICTIONARY_ENCODING_FOR_ROW_KEY_FIELDS = _defaults.user(
    "sleeper.default.table.parquet.dictionary.encoding.rowkey.fields",
    "The default for `sleeper.table.parquet.dictionary.encoding.rowkey.fields`: whether row key columns are "
    "dictionary encoded.",
    default="false",
    validation=BOOLEAN,
)
DEFAULT_DICTIONARY_ENCODING_FOR_SORT_KEY_FIELDS = _defaults.user(
    "sleeper.default.table.parquet.dictionary.encoding.sortkey.fields",
    "The default for `sleeper.table.parquet.dictionary.encoding.sortkey.fields`: whether sort key columns are "
    "dictionary encoded.",
    default="false",
    validation=BOOLEAN,
)
DEFAULT_DICTIONARY_ENCODING_FOR_VALUE_FIELDS = _defaults.user(
    "sleeper.default.table.parquet.dictionary.encoding.value.fields",
    "The default for `sleeper.table.parquet.dictionary.encoding.value.fields`: whether value columns are dictionary "
    "encoded.",
    default="false",
    validation=BOOLEAN,
)
DEFAULT_COLUMN_INDEX_TRUNCATE_LENGTH = _defaults.user(
    "sleeper.default.table.parquet.columnindex.truncate.length",
    "The default for `sleeper.table.parquet.columnindex.truncate.length`: the length in bytes to which binary values "
    "are truncated in Parquet column indexes.",
    default="128",
    validation=POSITIVE_INT,
    not_used="pyarrow's Parquet writer has no setting for it",
)
DEFAULT_STATISTICS_TRUNCATE_LENGTH = _defaults.user(
    "sleeper.default.table.parquet.statistics.truncate.length",
    "The default for `sleeper.table.parquet.statistics.truncate.length`: the length in bytes to which binary "
    "minimum and maximum values are truncated in Parquet row group statistics.",
    default="2147483647",
    validation=POSITIVE_INT,
    not_used="pyarrow's Parquet writer has no setting for it",
)
DEFAULT_DATAFUSION_S3_READAHEAD_ENABLED = _defaults.user(
    "sleeper.default.table.datafusion.s3.readahead.enabled",
    "The default for `sleeper.table.datafusion.s3.readahead.enabled`: whether reads from S3 are cached in blocks "
    "larger than those requested.",
    default="true",
    validation=BOOLEAN,
    not_used="the DataFusion engine reads local files only here",
)
DEFAULT_PARQUET_WRITER_VERSION = _defaults.user(
    "sleeper.default.table.parquet.writer.version",
    "The default for `sleeper.table.parquet.writer.version`: the Parquet data page version, `v1` or `v2` (v2 pages "
    "store repetition and definition levels uncompressed).",
    default="v2",
    validation=ChoiceValue(PARQUET_WRITER_VERSIONS, case_sensitive=True),
)
DEFAULT_PARQUET_ROWGROUP_ROWS = _defaults.user(
    "sleeper.default.table.parquet.rowgroup.rows.max",
    "The default for `sleeper.table.parquet.rowgroup.rows.max`: the most rows in a Parquet row group.",
    default="100000",
    validation=POSITIVE_INT,
)
DEFAULT_STATESTORE_CLASSNAME = _defaults.user(
    "sleeper.default.table.statestore.classname",
    "Beyond Sleeper: the default for `sleeper.table.statestore.classname`, the state store of a table created without "
    "one. An AWS deployment whose default is S3TransactionLogStateStore, and whose configuration's tables all use "
    "that store, deploys no DynamoDB transaction log or snapshot tables; a table asking for a DynamoDB store is then "
    "refused when it is created. Fixed when the instance is deployed (tables created before would change store).",
    default="DynamoDBTransactionLogStateStore",
    validation=NON_EMPTY,
    editable=False,
)
DEFAULT_ADD_TRANSACTION_MAX_ATTEMPTS = _defaults.user(
    "sleeper.default.table.statestore.transactionlog.add.transaction.max.attempts",
    "The default for `sleeper.table.statestore.transactionlog.add.transaction.max.attempts`: how many times adding a "
    "transaction to the log is attempted when it conflicts with other writers.",
    default="10",
    validation=POSITIVE_INT,
)
DEFAULT_ADD_TRANSACTION_FIRST_RETRY_WAIT_CEILING_MS = _defaults.user(
    "sleeper.default.table.statestore.transactionlog.add.transaction.first.retry.wait.ceiling.ms",
    "The default for `sleeper.table.statestore.transactionlog.add.transaction.first.retry.wait.ceiling.ms`: the "
    "most milliseconds to wait before the first retry of adding a transaction. The wait is random between 0 and the "
    "ceiling (full jitter), and the ceiling doubles on each retry.",
    default="200",
    validation=POSITIVE_INT,
)
DEFAULT_ADD_TRANSACTION_MAX_RETRY_WAIT_CEILING_MS = _defaults.user(
    "sleeper.default.table.statestore.transactionlog.add.transaction.max.retry.wait.ceiling.ms",
    "The default for `sleeper.table.statestore.transactionlog.add.transaction.max.retry.wait.ceiling.ms`: the most "
    "the wait ceiling grows to while retrying to add a transaction.",
    default="30000",
    validation=POSITIVE_INT,
)
DEFAULT_FILES_SNAPSHOT_BATCH_SIZE = _defaults.user(
    "sleeper.default.table.statestore.transactionlog.files.snapshot.batch.size",
    "The default for `sleeper.table.statestore.transactionlog.files.snapshot.batch.size`: how many file references "
    "go in one Arrow record batch of a files snapshot (a file's references are never split between batches).",
    default="1000",
    validation=SNAPSHOT_BATCH_SIZE,
)
DEFAULT_PARTITIONS_SNAPSHOT_BATCH_SIZE = _defaults.user(
    "sleeper.default.table.statestore.transactionlog.partitions.snapshot.batch.size",
    "The default for `sleeper.table.statestore.transactionlog.partitions.snapshot.batch.size`: how many partitions "
    "go in one Arrow record batch of a partitions snapshot.",
    default="1000",
    validation=SNAPSHOT_BATCH_SIZE,
)
DEFAULT_TIME_BETWEEN_SNAPSHOT_CHECKS_SECS = _defaults.user(
    "sleeper.default.table.statestore.transactionlog.time.between.snapshot.checks.seconds",
    "The default for `sleeper.table.statestore.transactionlog.time.between.snapshot.checks.seconds`: how long after "
    "loading a snapshot a process waits before looking for a newer one. Relates to "
    "`sleeper.statestore.snapshot.creation.lambda.period.seconds`.",
    default="60",
    validation=NON_NEGATIVE_INT,
)
DEFAULT_TIME_BETWEEN_TRANSACTION_CHECKS_MS = _defaults.user(
    "sleeper.default.table.statestore.transactionlog.time.between.transaction.checks.ms",
    "The default for `sleeper.table.statestore.transactionlog.time.between.transaction.checks.ms`: how long after "
    "reading the log a process may use its state without checking for new transactions. Adding a transaction always "
    "brings the state fully up to date first.",
    default="0",
    validation=NON_NEGATIVE_INT,
)
DEFAULT_MIN_TRANSACTIONS_AHEAD_TO_LOAD_SNAPSHOT = _defaults.user(
    "sleeper.default.table.statestore.transactionlog.snapshot.load.min.transactions.ahead",
    "The default for `sleeper.table.statestore.transactionlog.snapshot.load.min.transactions.ahead`: how many "
    "transactions a snapshot must be ahead of a process's state before the process loads it instead of reading the "
    "log.",
    default="10",
    validation=POSITIVE_INT,
)
DEFAULT_TRANSACTION_LOG_SNAPSHOT_EXPIRY_IN_DAYS = _defaults.user(
    "sleeper.default.table.statestore.transactionlog.snapshot.expiry.days",
    "The default for `sleeper.table.statestore.transactionlog.snapshot.expiry.days`: how many days old snapshots "
    "are kept before they are deleted.",
    default="2",
    validation=POSITIVE_INT,
)
DEFAULT_TRANSACTION_LOG_SNAPSHOT_MIN_AGE_MINUTES_TO_DELETE_TRANSACTIONS = _defaults.user(
    "sleeper.default.table.statestore.transactionlog.delete.behind.snapshot.min.age.minutes",
    "The default for `sleeper.table.statestore.transactionlog.delete.behind.snapshot.min.age.minutes`: how old, in "
    "minutes, a snapshot must be before the transactions leading up to it may be deleted, since a process may still "
    "be reading on from an older snapshot.",
    default="2",
    validation=POSITIVE_INT,
)
DEFAULT_TRANSACTION_LOG_NUMBER_BEHIND_TO_DELETE = _defaults.user(
    "sleeper.default.table.statestore.transactionlog.delete.number.behind.latest.snapshot",
    "The default for `sleeper.table.statestore.transactionlog.delete.number.behind.latest.snapshot`: how many "
    "transactions up to and including the latest snapshot's are always kept when old transactions are deleted. "
    "Transactions after the snapshot are never deleted.",
    default="200",
    validation=POSITIVE_INT,
)
DEFAULT_BULK_IMPORT_MIN_LEAF_PARTITION_COUNT = _defaults.user(
    "sleeper.default.table.bulk.import.min.leaf.partitions",
    "The default for `sleeper.table.bulk.import.min.leaf.partitions`: the fewest leaf partitions a table needs for a "
    "bulk import job to run; with fewer, bulk import splits partitions first.",
    default="256",
    validation=POSITIVE_INT,
)
DEFAULT_BULK_IMPORT_PARTITION_SPLITTING_ATTEMPTS = _defaults.user(
    "sleeper.default.table.bulk.import.partition.splitting.attempts",
    "The default for `sleeper.table.bulk.import.partition.splitting.attempts`: how many times bulk import tries to "
    "split partitions to reach the minimum number of leaf partitions (retried if another process splits the same "
    "partitions at the same time).",
    default="3",
    validation=POSITIVE_INT,
)
DEFAULT_INGEST_BATCHER_MIN_JOB_SIZE = _defaults.user(
    "sleeper.default.table.ingest.batcher.job.min.size",
    "The default for `sleeper.table.ingest.batcher.job.min.size`: the least total size of waiting files for the "
    "batcher to create a job (the minimum number of files must also be met).",
    default="1G",
    validation=BYTE_SIZE,
)
DEFAULT_INGEST_BATCHER_MAX_JOB_SIZE = _defaults.user(
    "sleeper.default.table.ingest.batcher.job.max.size",
    "The default for `sleeper.table.ingest.batcher.job.max.size`: the most total file size in one batcher job; more "
    "waiting data is split between jobs. A single larger file gets a job of its own.",
    default="5G",
    validation=BYTE_SIZE,
)
DEFAULT_INGEST_BATCHER_MIN_JOB_FILES = _defaults.user(
    "sleeper.default.table.ingest.batcher.job.min.files",
    "The default for `sleeper.table.ingest.batcher.job.min.files`: the fewest waiting files for the batcher to "
    "create a job (the minimum size must also be met).",
    default="1",
    validation=POSITIVE_INT,
)
DEFAULT_INGEST_BATCHER_MAX_JOB_FILES = _defaults.user(
    "sleeper.default.table.ingest.batcher.job.max.files",
    "The default for `sleeper.table.ingest.batcher.job.max.files`: the most files in one batcher job; more waiting "
    "files are split between jobs.",
    default="100",
    validation=POSITIVE_INT,
)
DEFAULT_INGEST_BATCHER_MAX_FILE_AGE_SECONDS = _defaults.user(
    "sleeper.default.table.ingest.batcher.file.max.age.seconds",
    "The default for `sleeper.table.ingest.batcher.file.max.age.seconds`: once any file has waited this many "
    "seconds, jobs are created for all waiting files even if the other criteria are not met.",
    default="300",
    validation=POSITIVE_INT,
)
DEFAULT_INGEST_BATCHER_INGEST_QUEUE = _defaults.user(
    "sleeper.default.table.ingest.batcher.ingest.queue",
    "The default for `sleeper.table.ingest.batcher.ingest.queue`: the queue batcher jobs are sent to. Valid values: "
    + ", ".join(INGEST_QUEUES)
    + ".",
    default="bulk_import_emr_serverless",
    validation=ChoiceValue(INGEST_QUEUES),
)
DEFAULT_INGEST_BATCHER_TRACKING_TTL_MINUTES = _defaults.user(
    "sleeper.default.table.ingest.batcher.file.tracking.ttl.minutes",
    "The default for `sleeper.table.ingest.batcher.file.tracking.ttl.minutes`: how long, in minutes, the batcher "
    "keeps its record of a file (which job it went to, when, its size). A week by default; a change only affects "
    "files submitted afterwards.",
    default="10080",
    validation=NON_NEGATIVE_INT,
)
DEFAULT_INGEST_FILE_WRITING_STRATEGY = _defaults.user(
    "sleeper.default.table.ingest.file.writing.strategy",
    "The default for `sleeper.table.ingest.file.writing.strategy`: how ingest lays out files among partitions. Valid "
    "values: " + ", ".join(INGEST_FILE_WRITING_STRATEGIES) + ".",
    default="one_reference_per_leaf",
    validation=ChoiceValue(INGEST_FILE_WRITING_STRATEGIES),
)
DEFAULT_INGEST_ROW_BATCH_TYPE = _defaults.user(
    "sleeper.default.table.ingest.row.batch.type",
    "The default for `sleeper.table.ingest.row.batch.type`: which limits hold ingest's memory and local disk, "
    "`arrow` (bytes) or `arraylist` (rows).",
    default="arrow",
    validation=ChoiceValue(INGEST_ROW_BATCH_TYPES),
)
DEFAULT_INGEST_PARTITION_FILE_WRITER_TYPE = _defaults.user(
    "sleeper.default.table.ingest.partition.file.writer.type",
    "The default for `sleeper.table.ingest.partition.file.writer.type`: whether ingest writes files straight to S3 "
    "(`direct`) or locally and then uploads them (`async`).",
    default="async",
    validation=ChoiceValue(INGEST_PARTITION_FILE_WRITER_TYPES),
    not_used=("ingest writes each partition's file with pyarrow straight to its destination; there is no other writer"),
)
DEFAULT_ASYNC_COMMIT_BEHAVIOUR = _defaults.user(
    "sleeper.default.table.statestore.commit.async.behaviour",
    "Whether tables apply state store updates asynchronously through the state store committer by default: "
    "`DISABLED`, `PER_IMPLEMENTATION` (for transaction log state stores, which benefit from one writer per table) or "
    "`ALL_IMPLEMENTATIONS`. A table can override it with `sleeper.table.statestore.commit.async.enabled`.",
    default="PER_IMPLEMENTATION",
    validation=ChoiceValue(ASYNC_COMMIT_BEHAVIOURS),
)
DEFAULT_COMPACTION_JOB_ID_ASSIGNMENT_COMMIT_ASYNC = _defaults.user(
    "sleeper.default.table.compaction.job.id.assignment.commit.async",
    "The default for `sleeper.table.compaction.job.id.assignment.commit.async`: whether assigning input files to new "
    "compaction jobs goes through the state store committer (when asynchronous commits are enabled).",
    default="true",
    validation=BOOLEAN,
)
DEFAULT_COMPACTION_JOB_COMMIT_ASYNC = _defaults.user(
    "sleeper.default.table.compaction.job.commit.async",
    "The default for `sleeper.table.compaction.job.commit.async`: whether finished compactions are committed "
    "through the state store committer (when asynchronous commits are enabled).",
    default="true",
    validation=BOOLEAN,
)
DEFAULT_COMPACTION_JOB_ASYNC_BATCHING = _defaults.user(
    "sleeper.default.table.compaction.job.async.commit.batching",
    "The default for `sleeper.table.compaction.job.async.commit.batching`: whether asynchronous compaction commits "
    "are batched up before they go to the state store committer.",
    default="true",
    validation=BOOLEAN,
)
DEFAULT_INGEST_FILES_COMMIT_ASYNC = _defaults.user(
    "sleeper.default.table.ingest.job.files.commit.async",
    "The default for `sleeper.table.ingest.job.files.commit.async`: whether ingest adds files through the state "
    "store committer (when asynchronous commits are enabled).",
    default="true",
    validation=BOOLEAN,
)
DEFAULT_BULK_IMPORT_FILES_COMMIT_ASYNC = _defaults.user(
    "sleeper.default.table.bulk.import.job.files.commit.async",
    "The default for `sleeper.table.bulk.import.job.files.commit.async`: whether bulk import adds files through the "
    "state store committer (when asynchronous commits are enabled).",
    default="true",
    validation=BOOLEAN,
)
DEFAULT_PARTITION_SPLIT_ASYNC_COMMIT = _defaults.user(
    "sleeper.default.table.partition.splitting.commit.async",
    "The default for `sleeper.table.partition.splitting.commit.async`: whether partition splits go through the "
    "state store committer (when asynchronous commits are enabled).",
    default="true",
    validation=BOOLEAN,
)
DEFAULT_GARBAGE_COLLECTOR_ASYNC_COMMIT = _defaults.user(
    "sleeper.default.table.gc.commit.async",
    "The default for `sleeper.table.gc.commit.async`: whether the garbage collector records deleted files through "
    "the state store committer (when asynchronous commits are enabled).",
    default="true",
    validation=BOOLEAN,
)
DEFAULT_STATESTORE_COMMITTER_UPDATE_ON_EVERY_COMMIT = _defaults.user(
    "sleeper.default.table.statestore.committer.update.every.commit",
    "The default for `sleeper.table.statestore.committer.update.every.commit`: whether the state store committer "
    "reads the log before adding each transaction.",
    default="false",
    validation=BOOLEAN,
    not_used="the committer reads the log's new entries before every commit, as if this were true",
)
DEFAULT_STATESTORE_COMMITTER_UPDATE_ON_EVERY_BATCH = _defaults.user(
    "sleeper.default.table.statestore.committer.update.every.batch",
    "The default for `sleeper.table.statestore.committer.update.every.batch`: whether the state store committer "
    "reads the log before adding each batch of transactions.",
    default="true",
    validation=BOOLEAN,
    not_used="the committer reads the log's new entries before every commit, so before every batch too",
)
DEFAULT_DATA_ENGINE = _defaults.user(
    "sleeper.default.table.data.engine",
    "The default for `sleeper.table.data.engine`: the engine that compacts a table's data and reads it for queries "
    "(bulk export reads with `ARROW` whatever it names). Valid values, "
    "in any case: " + ", ".join(DATA_ENGINES) + ". The default shown is Sleeper's; while neither this nor the "
    "table's property is set, this port compacts and reads with `ARROW`, which it measured faster and smaller than "
    'DataFusion here (docs/performance.md, "Compaction engines"). Set `DATAFUSION` to use DataFusion.',
    default="DATAFUSION",
    validation=ChoiceValue(DATA_ENGINES),
)

DEFINITIONS = _defaults.all()
"""The definitions in this module, in order."""
