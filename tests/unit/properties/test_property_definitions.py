"""The property definitions cover Sleeper's instance and table properties with Sleeper's names and defaults, and are
consistent. The ``SPEC_*`` lists below are Sleeper's (gchq/sleeper ``java/core/src/main/java/sleeper/core/properties/``,
``instance/*Property.java`` and ``table/TableProperty.java``)."""

from __future__ import annotations

import pytest

from sleeper.core.properties import (
    INSTANCE_PROPERTY_INDEX,
    TABLE_PROPERTY_INDEX,
    InstanceProperties,
    PropertyDefinition,
    TableProperties,
)
from sleeper.core.properties.definitions import PropertyGroup

SPEC_INSTANCE_PROPERTIES = [
    "sleeper.id",
    "sleeper.account",
    "sleeper.region",
    "sleeper.config.bucket",
    "sleeper.data.bucket",
    "sleeper.jars.bucket",
    "sleeper.userjars",
    "sleeper.ingest.source.bucket",
    "sleeper.filesystem",
    "sleeper.optional.stacks",
    "sleeper.tables.name.index.dynamo.table",
    "sleeper.tables.id.index.dynamo.table",
    "sleeper.tables.online.index.dynamo.table",
    "sleeper.statestore.transactionlog.dynamo.file.log.table",
    "sleeper.statestore.transactionlog.dynamo.partition.log.table",
    "sleeper.statestore.transactionlog.dynamo.all.snapshots.table",
    "sleeper.statestore.transactionlog.dynamo.latest.snapshots.table",
    "sleeper.statestore.committer.queue.url",
    "sleeper.statestore.committer.batch.size",
    "sleeper.statestore.snapshot.creation.lambda.period.seconds",
    "sleeper.statestore.snapshot.deletion.lambda.period.minutes",
    "sleeper.statestore.transaction.deletion.lambda.period.minutes",
    "sleeper.ingest.job.queue.url",
    "sleeper.ingest.batcher.submit.queue.url",
    "sleeper.bulk.import.emr.job.queue.url",
    "sleeper.bulk.import.emr.serverless.job.queue.url",
    "sleeper.bulk.import.persistent.emr.job.queue.url",
    "sleeper.bulk.import.eks.job.queue.url",
    "sleeper.bulk.import.class.name",
    "sleeper.ingest.max.concurrent.tasks",
    "sleeper.ingest.task.creation.period.minutes",
    "sleeper.ingest.partition.refresh.period",
    "sleeper.ingest.max.local.rows",
    "sleeper.ingest.memory.max.batch.size",
    "sleeper.ingest.arrow.batch.buffer.bytes",
    "sleeper.ingest.arrow.working.buffer.bytes",
    "sleeper.ingest.arrow.max.local.store.bytes",
    "sleeper.ingest.batcher.job.creation.period.minutes",
    "sleeper.compaction.job.queue.url",
    "sleeper.compaction.pending.queue.url",
    "sleeper.compaction.commit.queue.url",
    "sleeper.compaction.job.creation.queue.url",
    "sleeper.compaction.job.creation.period.minutes",
    "sleeper.compaction.task.creation.period.minutes",
    "sleeper.compaction.max.concurrent.tasks",
    "sleeper.compaction.task.max.idle.time.seconds",
    "sleeper.compaction.task.max.consecutive.failures",
    "sleeper.compaction.job.commit.batch.size",
    "sleeper.compaction.job.commit.batching.window.seconds",
    "sleeper.partition.splitting.period.minutes",
    "sleeper.partition.splitting.files.maximum",
    "sleeper.gc.period.minutes",
    "sleeper.gc.batch.size",
    "sleeper.gc.files.maximum",
    "sleeper.run.gc.offline",
    "sleeper.query.queue.url",
    "sleeper.query.leaf.partition.queue.url",
    "sleeper.query.results.queue.url",
    "sleeper.query.results.bucket",
    "sleeper.query.tracker.table.name",
    "sleeper.query.websocket.api.url",
    "sleeper.query.tracker.ttl.days",
    "sleeper.query.results.bucket.expiry.days",
    "sleeper.query.processor.results.batch.size",
    "sleeper.default.query.results.rowgroup.size",
    "sleeper.default.query.results.page.size",
    "sleeper.bulk.export.queue.url",
    "sleeper.default.table.statestore.commit.async.behaviour",
    "sleeper.run.table.metrics.offline",
]

SPEC_TABLE_PROPERTIES = [
    "sleeper.table.name",
    "sleeper.table.id",
    "sleeper.table.schema",
    "sleeper.table.online",
    "sleeper.table.statestore.classname",
    "sleeper.table.splits.file",
    "sleeper.table.splits.base64.encoded",
    "sleeper.table.partition.splitting.threshold",
    "sleeper.table.partition.splitting.min.rows",
    "sleeper.table.partition.splitting.min.distribution.percent",
    "sleeper.table.compaction.strategy.class",
    "sleeper.table.compaction.files.batch.size",
    "sleeper.table.compaction.strategy.sizeratio.ratio",
    "sleeper.table.compaction.strategy.sizeratio.max.concurrent.jobs.per.partition",
    "sleeper.table.compaction.job.creation.limit",
    "sleeper.table.compaction.job.send.batch.size",
    "sleeper.table.compaction.job.send.timeout.seconds",
    "sleeper.table.compaction.job.send.retry.delay.seconds",
    "sleeper.table.compaction.job.id.assignment.commit.async",
    "sleeper.table.compaction.job.commit.async",
    "sleeper.table.compaction.job.async.commit.batching",
    "sleeper.table.data.engine",
    "sleeper.table.iterator.class.name",
    "sleeper.table.iterator.config",
    "sleeper.table.filters",
    "sleeper.table.aggregations",
    "sleeper.table.gc.delay.minutes",
    "sleeper.table.gc.commit.async",
    "sleeper.table.partition.splitting.commit.async",
    "sleeper.table.ingest.job.files.commit.async",
    "sleeper.table.bulk.import.job.files.commit.async",
    "sleeper.table.ingest.file.writing.strategy",
    "sleeper.table.ingest.row.batch.type",
    "sleeper.table.ingest.partition.file.writer.type",
    "sleeper.table.ingest.batcher.job.min.size",
    "sleeper.table.ingest.batcher.job.max.size",
    "sleeper.table.ingest.batcher.job.min.files",
    "sleeper.table.ingest.batcher.job.max.files",
    "sleeper.table.ingest.batcher.file.max.age.seconds",
    "sleeper.table.ingest.batcher.file.tracking.ttl.minutes",
    "sleeper.table.ingest.batcher.ingest.queue",
    "sleeper.table.bulk.import.min.leaf.partitions",
    "sleeper.table.bulk.import.partition.splitting.attempts",
    "sleeper.table.parquet.rowgroup.size",
    "sleeper.table.parquet.rowgroup.rows.max",
    "sleeper.table.parquet.page.size",
    "sleeper.table.parquet.compression.codec",
    "sleeper.table.parquet.writer.version",
    "sleeper.table.parquet.dictionary.encoding.rowkey.fields",
    "sleeper.table.parquet.dictionary.encoding.sortkey.fields",
    "sleeper.table.parquet.dictionary.encoding.value.fields",
    "sleeper.table.parquet.columnindex.truncate.length",
    "sleeper.table.parquet.statistics.truncate.length",
    "sleeper.table.query.processor.cache.timeout.seconds",
    "sleeper.table.statestore.transactionlog.add.transaction.max.attempts",
    "sleeper.table.statestore.transactionlog.add.transaction.first.retry.wait.ceiling.ms",
    "sleeper.table.statestore.transactionlog.add.transaction.max.retry.wait.ceiling.ms",
    "sleeper.table.statestore.transactionlog.snapshot.load.min.transactions.ahead",
    "sleeper.table.statestore.transactionlog.time.between.snapshot.checks.seconds",
    "sleeper.table.statestore.transactionlog.time.between.transaction.checks.ms",
    "sleeper.table.statestore.transactionlog.snapshot.expiry.days",
    "sleeper.table.statestore.transactionlog.delete.behind.snapshot.min.age.minutes",
    "sleeper.table.statestore.transactionlog.delete.number.behind.latest.snapshot",
    "sleeper.table.statestore.committer.update.every.commit",
    "sleeper.table.statestore.committer.update.every.batch",
]

SPEC_INSTANCE_DEFAULTS = {
    "sleeper.filesystem": "s3a://",
    "sleeper.optional.stacks": "IngestStack,IngestBatcherStack,EmrServerlessBulkImportStack,EmrStudioStack,"
    "QueryStack,CompactionStack,GarbageCollectorStack,PartitionSplittingStack,DashboardStack,TableMetricsStack",
    "sleeper.statestore.committer.batch.size": "10",
    "sleeper.statestore.snapshot.creation.lambda.period.seconds": "60",
    "sleeper.statestore.snapshot.deletion.lambda.period.minutes": "60",
    "sleeper.statestore.transaction.deletion.lambda.period.minutes": "60",
    "sleeper.bulk.import.class.name": "sleeper.bulkimport.runner.dataframelocalsort.BulkImportDataframeLocalSortDriver",
    "sleeper.ingest.max.concurrent.tasks": "200",
    "sleeper.ingest.task.creation.period.minutes": "1",
    "sleeper.ingest.partition.refresh.period": "120",
    "sleeper.ingest.max.local.rows": "100000000",
    "sleeper.ingest.memory.max.batch.size": "1000000",
    "sleeper.ingest.arrow.batch.buffer.bytes": "1073741824",
    "sleeper.ingest.arrow.working.buffer.bytes": "268435456",
    "sleeper.ingest.arrow.max.local.store.bytes": "2147483648",
    "sleeper.ingest.batcher.job.creation.period.minutes": "1",
    "sleeper.compaction.job.creation.period.minutes": "1",
    "sleeper.compaction.task.creation.period.minutes": "1",
    "sleeper.compaction.max.concurrent.tasks": "300",
    "sleeper.compaction.task.max.idle.time.seconds": "60",
    "sleeper.compaction.task.max.consecutive.failures": "3",
    "sleeper.compaction.job.commit.batch.size": "1000",
    "sleeper.compaction.job.commit.batching.window.seconds": "30",
    "sleeper.partition.splitting.period.minutes": "30",
    "sleeper.partition.splitting.files.maximum": "50",
    "sleeper.gc.period.minutes": "15",
    "sleeper.gc.batch.size": "10000",
    "sleeper.gc.files.maximum": "750000",
    "sleeper.run.gc.offline": "false",
    "sleeper.query.tracker.ttl.days": "1",
    "sleeper.query.results.bucket.expiry.days": "7",
    "sleeper.query.processor.results.batch.size": "2000",
    "sleeper.query.processor.timeout.seconds": "900",
    "sleeper.default.query.results.rowgroup.size": "8388608",
    "sleeper.default.query.results.page.size": "131072",
    "sleeper.default.table.statestore.commit.async.behaviour": "PER_IMPLEMENTATION",
}

SPEC_TABLE_DEFAULTS = {
    "sleeper.table.online": "true",
    "sleeper.table.statestore.classname": "DynamoDBTransactionLogStateStore",
    "sleeper.table.splits.base64.encoded": "false",
    "sleeper.table.partition.splitting.threshold": "1000000000",
    "sleeper.table.partition.splitting.min.rows": "1000",
    "sleeper.table.partition.splitting.min.distribution.percent": "10",
    "sleeper.table.compaction.strategy.class": "sleeper.compaction.core.job.creation.strategy.impl."
    "SizeRatioCompactionStrategy",
    "sleeper.table.compaction.files.batch.size": "12",
    "sleeper.table.compaction.strategy.sizeratio.ratio": "3",
    "sleeper.table.compaction.strategy.sizeratio.max.concurrent.jobs.per.partition": "2147483647",
    "sleeper.table.compaction.job.creation.limit": "100000",
    "sleeper.table.compaction.job.send.batch.size": "1000",
    "sleeper.table.compaction.job.send.timeout.seconds": "90",
    "sleeper.table.compaction.job.send.retry.delay.seconds": "30",
    "sleeper.table.compaction.job.id.assignment.commit.async": "true",
    "sleeper.table.compaction.job.commit.async": "true",
    "sleeper.table.compaction.job.async.commit.batching": "true",
    "sleeper.table.data.engine": "DATAFUSION",
    "sleeper.table.gc.commit.async": "true",
    "sleeper.table.partition.splitting.commit.async": "true",
    "sleeper.table.ingest.job.files.commit.async": "true",
    "sleeper.table.bulk.import.job.files.commit.async": "true",
    "sleeper.table.ingest.file.writing.strategy": "one_reference_per_leaf",
    "sleeper.table.ingest.row.batch.type": "arrow",
    "sleeper.table.ingest.partition.file.writer.type": "async",
    "sleeper.table.ingest.batcher.job.min.size": "1G",
    "sleeper.table.ingest.batcher.job.max.size": "5G",
    "sleeper.table.ingest.batcher.job.min.files": "1",
    "sleeper.table.ingest.batcher.job.max.files": "100",
    "sleeper.table.ingest.batcher.file.max.age.seconds": "300",
    "sleeper.table.ingest.batcher.file.tracking.ttl.minutes": "10080",
    "sleeper.table.ingest.batcher.ingest.queue": "bulk_import_emr_serverless",
    "sleeper.table.bulk.import.min.leaf.partitions": "256",
    "sleeper.table.bulk.import.partition.splitting.attempts": "3",
    "sleeper.table.parquet.rowgroup.size": "8388608",
    "sleeper.table.parquet.rowgroup.rows.max": "100000",
    "sleeper.table.parquet.page.size": "131072",
    "sleeper.table.parquet.compression.codec": "zstd",
    "sleeper.table.parquet.writer.version": "v2",
    "sleeper.table.parquet.dictionary.encoding.rowkey.fields": "false",
    "sleeper.table.parquet.dictionary.encoding.sortkey.fields": "false",
    "sleeper.table.parquet.dictionary.encoding.value.fields": "false",
    "sleeper.table.parquet.columnindex.truncate.length": "128",
    "sleeper.table.parquet.statistics.truncate.length": "2147483647",
    "sleeper.table.query.processor.cache.timeout.seconds": "60",
    "sleeper.table.statestore.transactionlog.add.transaction.max.attempts": "10",
    "sleeper.table.statestore.transactionlog.add.transaction.first.retry.wait.ceiling.ms": "200",
    "sleeper.table.statestore.transactionlog.add.transaction.max.retry.wait.ceiling.ms": "30000",
    "sleeper.table.statestore.transactionlog.snapshot.load.min.transactions.ahead": "10",
    "sleeper.table.statestore.transactionlog.time.between.snapshot.checks.seconds": "60",
    "sleeper.table.statestore.transactionlog.time.between.transaction.checks.ms": "0",
    "sleeper.table.statestore.transactionlog.snapshot.expiry.days": "2",
    "sleeper.table.statestore.transactionlog.delete.behind.snapshot.min.age.minutes": "2",
    "sleeper.table.statestore.transactionlog.delete.number.behind.latest.snapshot": "200",
    "sleeper.table.statestore.committer.update.every.commit": "false",
    "sleeper.table.statestore.committer.update.every.batch": "true",
}

ALL_DEFINITIONS = list(INSTANCE_PROPERTY_INDEX) + list(TABLE_PROPERTY_INDEX)
WITH_FALLBACK = [d for d in ALL_DEFINITIONS if d.default_property is not None]


@pytest.mark.parametrize("name", SPEC_INSTANCE_PROPERTIES)
def should_define_every_instance_property_of_the_spec(name: str) -> None:
    # Given an instance property Sleeper defines
    # When it is looked up
    definition = INSTANCE_PROPERTY_INDEX.get(name)
    # Then it is defined as an instance property
    assert definition is not None
    assert definition.name == name


@pytest.mark.parametrize("name", SPEC_TABLE_PROPERTIES)
def should_define_every_table_property_of_the_spec(name: str) -> None:
    # Given a table property Sleeper defines
    # When it is looked up
    definition = TABLE_PROPERTY_INDEX.get(name)
    # Then it is defined as a table property
    assert definition is not None
    assert definition.name == name


@pytest.mark.parametrize(("name", "expected"), sorted(SPEC_INSTANCE_DEFAULTS.items()))
def should_default_instance_properties_as_the_spec_says(name: str, expected: str) -> None:
    # Given instance properties with nothing set
    properties = InstanceProperties()
    # When a property is read
    value = properties.get(name)
    # Then it has Sleeper's default
    assert value == expected


@pytest.mark.parametrize(("name", "expected"), sorted(SPEC_TABLE_DEFAULTS.items()))
def should_default_table_properties_as_the_spec_says(name: str, expected: str) -> None:
    # Given a table with nothing set, in an instance with nothing set
    properties = TableProperties(InstanceProperties())
    # When a property is read
    value = properties.get(name)
    # Then it has Sleeper's default, through the instance default where there is one
    assert value == expected


def should_default_gc_delay_to_20_minutes_unlike_sleeper() -> None:
    # Given a table with nothing set
    properties = TableProperties(InstanceProperties())
    # When the GC delay is read at table and instance level
    table_delay = properties.get_int("sleeper.table.gc.delay.minutes")
    instance_delay = properties.instance_properties.get_int("sleeper.default.table.gc.delay.minutes")
    # Then both are 20: longer than the 60 s cache plus the 900 s query timeout, which Sleeper's 15 is not
    assert (table_delay, instance_delay) == (20, 20)
    assert table_delay * 60 > 60 + 900


@pytest.mark.parametrize("definition", ALL_DEFINITIONS, ids=lambda d: d.name)
def should_accept_every_built_in_default(definition: PropertyDefinition) -> None:
    # Given a property with a built-in default
    # When the default is checked against the property's validation
    problem = None if definition.default is None else definition.problem(definition.default)
    # Then it is accepted
    assert problem is None


@pytest.mark.parametrize("definition", WITH_FALLBACK, ids=lambda d: d.name)
def should_fall_back_only_to_defined_properties(definition: PropertyDefinition) -> None:
    # Given a property that falls back to another when unset
    fallback = str(definition.default_property)
    # When the other property is looked up among instance and table properties
    target = INSTANCE_PROPERTY_INDEX.get(fallback) or TABLE_PROPERTY_INDEX.get(fallback)
    # Then it exists and has the same default
    assert target is not None
    assert target.default == definition.default


def should_make_every_table_fallback_to_a_sleeper_default_table_property_except_table_to_table() -> None:
    # Given the table properties that fall back to an instance property
    fallbacks = [d.default_property for d in TABLE_PROPERTY_INDEX if d.default_property in INSTANCE_PROPERTY_INDEX]
    # When their names are inspected
    names = {name for name in fallbacks if name is not None}
    # Then each is an instance default named sleeper.default.table.*
    assert names
    assert all(name.startswith("sleeper.default.table.") for name in names)


def should_name_every_property_with_the_sleeper_prefix_and_a_description() -> None:
    # Given every definition
    # When their names and descriptions are inspected
    bad = [d.name for d in ALL_DEFINITIONS if not d.name.startswith("sleeper.") or not d.description.strip()]
    # Then all are sleeper.* and described
    assert bad == []


def should_put_table_properties_under_sleeper_table_and_instance_properties_elsewhere() -> None:
    # Given both indexes
    # When names are compared with the prefix of table properties
    misplaced_table = [d.name for d in TABLE_PROPERTY_INDEX if not d.name.startswith("sleeper.table.")]
    misplaced_instance = [d.name for d in INSTANCE_PROPERTY_INDEX if d.name.startswith("sleeper.table.")]
    # Then each kind has its own namespace
    assert misplaced_table == []
    assert misplaced_instance == []


def should_mark_queue_urls_bucket_and_dynamodb_table_names_as_set_by_the_deployment() -> None:
    # Given properties a deployment creates
    names = [
        "sleeper.config.bucket",
        "sleeper.data.bucket",
        "sleeper.query.results.bucket",
        "sleeper.ingest.job.queue.url",
        "sleeper.compaction.job.dlq.arn",
        "sleeper.statestore.transactionlog.dynamo.file.log.table",
        "sleeper.query.tracker.table.name",
    ]
    # When their definitions are read
    flags = {name: INSTANCE_PROPERTY_INDEX[name].set_by_cdk for name in names}
    # Then all are set by the deployment, and properties users set are not
    assert all(flags.values())
    assert not INSTANCE_PROPERTY_INDEX["sleeper.id"].set_by_cdk
    assert not INSTANCE_PROPERTY_INDEX["sleeper.gc.period.minutes"].set_by_cdk


def should_list_a_group_with_user_properties_before_deployment_properties() -> None:
    # Given the common group of instance properties
    group: PropertyGroup = INSTANCE_PROPERTY_INDEX["sleeper.id"].group
    # When its members are listed
    members = INSTANCE_PROPERTY_INDEX.in_group(group)
    flags = [d.set_by_cdk for d in members]
    # Then every user property comes before every deployment property
    assert flags == sorted(flags)
    assert True in flags and False in flags
