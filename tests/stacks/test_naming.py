"""The stacks deploy exactly the names ``sleeper.core.naming`` and ``sleeper.core.operations`` define, the names the
adapters, the AWS runtime and the emulated instance read from the same modules."""

from __future__ import annotations

from typing import Any

import pytest

from sleeper.core import naming, operations
from sleeper.core.naming import InstanceNames, JobTrackerTableNames, StateStoreTableNames, TableIndexTableNames
from sleeper.core.operations import TriggerKind

pytestmark = pytest.mark.slow

ID = "example"
ACCOUNT = "123456789012"


def _resolve(value: Any) -> Any:
    """A template value with the account pseudo-parameter and joins resolved."""
    if isinstance(value, dict) and value == {"Ref": "AWS::AccountId"}:
        return ACCOUNT
    if isinstance(value, dict) and set(value) == {"Fn::Join"}:
        separator, parts = value["Fn::Join"]
        return separator.join(str(_resolve(p)) for p in parts)
    return value


def _names(synthesized: Any, resource_type: str, key: str) -> set[Any]:
    return {_resolve(r["Properties"][key]) for _, r in synthesized.resources(resource_type) if key in r["Properties"]}


def should_deploy_the_dynamodb_tables_the_naming_module_names(synthesized: Any) -> None:
    # Given every DynamoDB table name of an instance
    state = StateStoreTableNames.for_instance(ID)
    index = TableIndexTableNames.for_instance(ID)
    trackers = [JobTrackerTableNames.ingest(ID), JobTrackerTableNames.compaction(ID)]
    expected = {state.files_log, state.partitions_log, state.latest_snapshots, state.all_snapshots}
    expected |= {index.by_name, index.by_id, index.by_online}
    expected |= {name for t in trackers for name in (t.updates, t.lookup)}
    expected |= {naming.task_tracker_table_name(ID, kind) for kind in ("ingest", "compaction")}
    expected |= {naming.query_tracker_table_name(ID), naming.batcher_store_table_name(ID)}
    # When the example instance's tables are listed
    deployed = _names(synthesized, "AWS::DynamoDB::Table", "TableName")
    # Then they are exactly those
    assert deployed == expected


def should_deploy_the_registry_queues_with_the_naming_module_names(synthesized: Any) -> None:
    # Given every queue of an AWS instance in the registry
    expected = {naming.queue_name(ID, q.name) for q in operations.aws_queues()}
    expected |= {naming.dead_letter_queue_name(ID, q.name) for q in operations.aws_queues()}
    # When the example instance's queues are listed
    deployed = _names(synthesized, "AWS::SQS::Queue", "QueueName")
    # Then they are exactly those, each with its dead-letter queue
    assert deployed == expected


def should_deploy_the_rules_clusters_and_buckets_the_naming_module_names(synthesized: Any) -> None:
    # Given the names of an instance's rules, clusters, task families, application and buckets
    names = InstanceNames(instance_id=ID, account=ACCOUNT)
    rules = {
        names.rule(h.trigger.rule)
        for h in operations.HANDLERS
        if h.trigger.kind is TriggerKind.SCHEDULE and h.trigger.rule is not None
    } | {names.rule(naming.ECS_TASK_FAILURE_RULE)}
    # When the example instance's are listed
    # Then they are those
    assert _names(synthesized, "AWS::Events::Rule", "Name") == rules
    assert _names(synthesized, "AWS::ECS::Cluster", "ClusterName") == {
        names.ingest_cluster,
        names.compaction_cluster,
        names.bulk_export_cluster,
    }
    assert _names(synthesized, "AWS::ECS::TaskDefinition", "Family") == {
        names.ingest_task_family,
        names.compaction_fargate_family,
        names.compaction_ec2_family,
        names.bulk_export_task_family,
    }
    assert _names(synthesized, "AWS::EMRServerless::Application", "Name") == {names.emr_serverless_application}
    assert _names(synthesized, "AWS::S3::Bucket", "BucketName") == {
        names.config_bucket,
        names.data_bucket,
        names.query_results_bucket,
        names.bulk_import_bucket,
        names.bulk_export_bucket,
        naming.access_logs_bucket_name(ID, ACCOUNT),
        naming.bucket_name(ID, naming.ATHENA_SPILL_BUCKET, ACCOUNT),
    }
