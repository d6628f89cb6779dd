"""Instance properties an AWS instance's runtime reads: the trackers' time to live, the state
store cache size and the table index's read consistency, on an instance on moto."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from sleeper.core.schema import Field, PrimitiveType, Schema
from sleeper.core.trackers.compaction import CompactionJobCreated
from sleeper.core.trackers.ingest import IngestJobValidated
from sleeper.core.trackers.query import QueryState, QueryUpdate
from sleeper.runtime.aws.instance import AwsInstance, AwsRuntimeConfig

pytestmark = [pytest.mark.integration, pytest.mark.aws]

SCHEMA = Schema(row_key_fields=(Field("key", PrimitiveType.LONG),))


@pytest.fixture
def configured(instance: AwsInstance) -> Iterator[AwsInstance]:
    """A fresh view of the instance with properties of the test saved in its config bucket, put back afterwards."""
    saved = instance.properties_store.load_instance()

    def save(**values: str) -> AwsInstance:
        instance.properties_store.save_instance({**saved, **values})
        return AwsInstance(
            AwsRuntimeConfig(config_bucket=instance.config.config_bucket, settings=instance.config.settings)
        )

    yield save  # type: ignore[misc]
    instance.properties_store.save_instance(saved)


def should_keep_tracker_updates_for_the_configured_time(configured: Any) -> None:
    # Given an instance keeping ingest job updates 60 s, compaction job updates 120 s and queries 2 days
    instance = configured(
        **{
            "sleeper.ingest.job.status.ttl": "60",
            "sleeper.compaction.job.status.ttl": "120",
            "sleeper.query.tracker.ttl.days": "2",
        }
    )
    now = datetime.now(tz=UTC).replace(microsecond=0)
    job, query = f"job-{uuid.uuid4()}", f"query-{uuid.uuid4()}"
    # When an update of each is recorded
    instance.ingest_job_tracker.record(IngestJobValidated(job_id=job, table_id="t", update_time=now, file_count=1))
    instance.compaction_job_tracker.record(
        CompactionJobCreated(job_id=job, table_id="t", update_time=now, partition_id="root", input_files_count=1)
    )
    instance.query_tracker.record(QueryUpdate(query_id=query, state=QueryState.QUEUED, update_time=now))
    # Then each expires after its time to live
    ingest, compaction = instance.ingest_job_tracker.job(job), instance.compaction_job_tracker.job(job)
    tracked = instance.query_tracker.status(query)
    assert ingest is not None and ingest.expiry_date == now + timedelta(seconds=60)
    assert compaction is not None and compaction.expiry_date == now + timedelta(seconds=120)
    assert tracked is not None and tracked.expiry_date == now + timedelta(days=2)


def should_keep_at_most_the_configured_number_of_tables_loaded(configured: Any) -> None:
    # Given an instance caching the state of one table at most, and two tables
    instance = configured(**{"sleeper.statestore.provider.cache.size": "1"})
    first = instance.create_table(f"cache-{uuid.uuid4().hex[:8]}", SCHEMA)
    second = instance.create_table(f"cache-{uuid.uuid4().hex[:8]}", SCHEMA)
    # When the first is loaded twice, then the second, then the first again
    a = instance.table_by_id(first.table_id)
    again = instance.table_by_id(first.table_id)
    instance.table_by_id(second.table_id)
    after = instance.table_by_id(first.table_id)
    # Then the first stays cached until the second is loaded, which drops it
    assert again is a
    assert after is not a


def should_read_the_table_index_as_consistently_as_configured(configured: Any) -> None:
    # Given an instance whose table index reads are eventually consistent (its properties read now)
    relaxed = configured(**{"sleeper.tables.index.dynamo.consistent.reads": "false"})
    relaxed_index = relaxed.table_index
    # And the instance with the default again, where a table is created
    strict = configured()
    name = f"index-{uuid.uuid4().hex[:8]}"
    strict.create_table(name, SCHEMA)
    # When the tables are listed through each
    # Then both find it (moto is consistent either way), and each asks DynamoDB as configured
    assert name in [t.table_name for t in relaxed.tables()]
    assert relaxed_index._consistent is False
    assert strict.table_index._consistent is True
