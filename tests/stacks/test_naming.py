"""The stacks name resources exactly as the AWS adapters (and so runtime.aws) expect."""

from __future__ import annotations

import pytest

from stacks import naming

resources = pytest.importorskip("sleeper.adapters.aws.resources")


def should_name_state_store_and_index_tables_as_the_adapters_do() -> None:
    # Given
    instance_id = "My.Instance-1"

    # When
    state = resources.StateStoreTableNames.for_instance(instance_id)
    index = resources.TableIndexTableNames.for_instance(instance_id)

    # Then
    assert naming.table_name(instance_id, naming.FILES_LOG) == state.files_log
    assert naming.table_name(instance_id, naming.PARTITIONS_LOG) == state.partitions_log
    assert naming.table_name(instance_id, naming.LATEST_SNAPSHOTS) == state.latest_snapshots
    assert naming.table_name(instance_id, naming.ALL_SNAPSHOTS) == state.all_snapshots
    assert naming.table_name(instance_id, naming.INDEX_BY_NAME) == index.by_name
    assert naming.table_name(instance_id, naming.INDEX_BY_ID) == index.by_id
    assert naming.table_name(instance_id, naming.INDEX_BY_ONLINE) == index.by_online


def should_name_tracker_tables_as_the_adapters_do() -> None:
    # Given
    instance_id = "abc"

    # When
    ingest = resources.JobTrackerTableNames.ingest(instance_id)
    compaction = resources.JobTrackerTableNames.compaction(instance_id)

    # Then
    assert naming.table_name(instance_id, naming.INGEST_JOB_UPDATES) == ingest.updates
    assert naming.table_name(instance_id, naming.INGEST_JOB_LOOKUP) == ingest.lookup
    assert naming.table_name(instance_id, naming.COMPACTION_JOB_UPDATES) == compaction.updates
    assert naming.table_name(instance_id, naming.COMPACTION_JOB_LOOKUP) == compaction.lookup
    assert naming.table_name(instance_id, naming.INGEST_TASK_STATUS) == resources.task_tracker_table_name(
        instance_id, "ingest"
    )
    assert naming.table_name(instance_id, naming.COMPACTION_TASK_STATUS) == resources.task_tracker_table_name(
        instance_id, "compaction"
    )
    assert naming.query_tracker_table_name(instance_id) == resources.query_tracker_table_name(instance_id)


@pytest.mark.parametrize(
    "logical_name",
    [
        naming.INGEST_JOB_Q,
        naming.QUERY_Q,
        naming.LEAF_PARTITION_QUERY_Q,
        naming.STATE_STORE_COMMITTER_Q,
        naming.GC_JOB_Q,
        naming.PARTITION_SPLITTING_JOB_Q,
        "Odd",
    ],
)
def should_name_queues_and_dead_letter_queues_as_the_adapters_do(logical_name: str) -> None:
    # Given
    instance_id = "inst"

    # When / Then
    assert naming.queue_name(instance_id, logical_name) == resources.queue_name(instance_id, logical_name)
    assert naming.dead_letter_queue_name(instance_id, logical_name) == resources.dead_letter_queue_name(
        instance_id, logical_name
    )


def should_name_the_config_bucket_as_sleepers_client_derives_it() -> None:
    # Given
    from sleeper.core.properties import config_bucket_name

    # When / Then
    assert naming.config_bucket_name("My.Inst", "123456789012") == config_bucket_name("My.Inst", "123456789012")


def should_cut_rule_names_to_64_characters() -> None:
    # Given
    instance_id = "x" * 40

    # When
    name = naming.rule_name(instance_id, naming.TRANSACTION_DELETION_RULE)

    # Then
    assert len(name) == 64
    assert name.startswith(instance_id + "-TransactionLog")
