"""The example instance (what ``python -m sleeper.cdk.app -c example=true`` synthesizes): resources, names,
environment, event sources, schedules, and what instance.properties records. One synthesis per session
(see conftest)."""

from __future__ import annotations

import re
from typing import Any

import pytest
from aws_cdk.assertions import Match

from sleeper.cdk.instance import SUPPORTED_OPTIONAL_STACKS
from sleeper.core import naming, operations
from sleeper.core.operations import BULK_IMPORT_PERSISTENT_EMR_Q
from sleeper.core.properties import javaprops
from tests.reliability_report import Reliability

pytestmark = pytest.mark.slow

ID = "example"


def _names(synthesized: Any, resource_type: str, key: str) -> set[str]:
    return {r["Properties"][key] for _, r in synthesized.resources(resource_type) if key in r["Properties"]}


def should_synthesize_every_supported_optional_stack(synthesized: Any) -> None:
    # Given
    nested = set(synthesized.stack.parts)

    # Then
    assert {"Compaction", "Ingest", "IngestBatcher", "EmrServerlessBulkImport", "EmrBulkImport", "Query"} <= nested
    assert {"CommonEmrBulkImport", "PersistentEmrBulkImport"} <= nested
    assert {
        "PartitionSplitting",
        "GarbageCollector",
        "TableMetrics",
        "Athena",
        "ManagedPolicies",
        "Networking",
        "Dashboard",
        "BulkExport",
        "EksBulkImport",
    } <= nested
    assert {"ConfigBucket", "TableData", "TableIndex", "StateStore", "StateStoreCommitter"} <= nested
    assert {"TableDefiner", "Alarms"} <= nested
    assert len(SUPPORTED_OPTIONAL_STACKS) == 17
    assert (synthesized.outdir / "example.template.json").is_file()


def should_name_every_queue_and_dead_letter_queue_as_runtime_expects(synthesized: Any) -> None:
    # Given
    o = operations
    logical = [
        o.STATE_STORE_COMMITTER_Q, o.INGEST_JOB_Q, o.INGEST_BATCHER_SUBMIT_Q, o.COMPACTION_JOB_Q,
        o.PENDING_COMPACTION_JOB_BATCH_Q, o.COMPACTION_COMMIT_Q, o.PARTITION_SPLITTING_JOB_Q,
        o.QUERY_Q, o.LEAF_PARTITION_QUERY_Q, o.BULK_IMPORT_EMR_SERVERLESS_Q, o.BULK_IMPORT_EMR_Q,
        o.COMPACTION_JOB_CREATION_Q, o.FIND_PARTITIONS_TO_SPLIT_Q, o.GC_JOB_Q,
        o.SNAPSHOT_CREATION_Q, o.SNAPSHOT_DELETION_Q, o.TRANSACTION_DELETION_Q, o.METRICS_JOB_Q,
        o.ICEBERG_PUBLISH_Q,
        BULK_IMPORT_PERSISTENT_EMR_Q,
    ]  # fmt: skip

    # When
    names = _names(synthesized, "AWS::SQS::Queue", "QueueName")

    # Then
    for name in logical:
        assert naming.queue_name(ID, name) in names
        assert naming.dead_letter_queue_name(ID, name) in names
    assert "sleeper-example-GCJobQ.fifo" in names and "sleeper-example-GCJobDLQ.fifo" in names


def should_secure_every_queue_with_encryption_tls_and_a_dead_letter_queue(
    synthesized: Any, reliability: Reliability
) -> None:
    # Given
    queues = synthesized.resources("AWS::SQS::Queue")
    policies = synthesized.resources("AWS::SQS::QueuePolicy")

    # Then
    dead_letter_names = {n for _, r in queues if "DLQ" in (n := r["Properties"]["QueueName"])}
    tls_only = [
        s
        for _, p in policies
        for s in p["Properties"]["PolicyDocument"]["Statement"]
        if s["Effect"] == "Deny" and s.get("Condition") == {"Bool": {"aws:SecureTransport": "false"}}
    ]
    work_queues = [q["Properties"] for _, q in queues if q["Properties"]["QueueName"] not in dead_letter_names]
    reliability.record(
        "G4",
        case="SQS queues: SSE, TLS-only policy, a DLQ for every non-DLQ queue",
        queues=len(queues),
        dead_letter_queues=len(dead_letter_names),
        without_sse=sum(q["Properties"].get("SqsManagedSseEnabled") is not True for _, q in queues),
        tls_only_denies=len(tls_only),
        work_queues_without_dlq=sum("RedrivePolicy" not in q for q in work_queues),
    )
    for _, queue in queues:
        properties = queue["Properties"]
        assert properties["SqsManagedSseEnabled"] is True
        if properties["QueueName"] not in dead_letter_names:
            assert properties["RedrivePolicy"]["maxReceiveCount"] >= 1
        if properties["QueueName"].endswith(".fifo"):
            assert properties["FifoQueue"] is True
    denies = [s for _, p in policies for s in p["Properties"]["PolicyDocument"]["Statement"] if s["Effect"] == "Deny"]
    assert len(denies) == len(queues)
    assert all(s["Condition"] == {"Bool": {"aws:SecureTransport": "false"}} for s in denies)


def should_alarm_on_every_dead_letter_queue(synthesized: Any, reliability: Reliability) -> None:
    # Given
    queues = synthesized.resources("AWS::SQS::Queue")
    alarms = [(name, a) for name, a in synthesized.resources("AWS::CloudWatch::Alarm") if name != "Alarms"]

    # Then
    dead_letter_queues = [q for _, q in queues if "DLQ" in q["Properties"]["QueueName"]]
    reliability.record(
        "G4",
        case="a CloudWatch alarm on every dead-letter queue",
        dead_letter_queues=len(dead_letter_queues),
        dlq_alarms=len(alarms),
        dead_letter_queues_without_alarm=max(0, len(dead_letter_queues) - len(alarms)),
    )
    assert len(alarms) == len(dead_letter_queues)
    for _, alarm in alarms:
        assert alarm["Properties"]["MetricName"] == "ApproximateNumberOfMessagesVisible"
        assert alarm["Properties"]["Threshold"] == 0
        assert len(alarm["Properties"]["AlarmActions"]) == 1


def should_name_dynamodb_tables_with_sleepers_keys(synthesized: Any) -> None:
    # Given
    tables = {r["Properties"]["TableName"]: r["Properties"] for _, r in synthesized.resources("AWS::DynamoDB::Table")}

    # Then
    files_log = tables["sleeper-example-file-transaction-log"]
    assert files_log["KeySchema"] == [
        {"AttributeName": "TABLE_ID", "KeyType": "HASH"},
        {"AttributeName": "TRANSACTION_NUMBER", "KeyType": "RANGE"},
    ]
    assert files_log["StreamSpecification"] == {"StreamViewType": "NEW_IMAGE"}
    assert tables["sleeper-example-transaction-log-all-snapshots"]["KeySchema"][0]["AttributeName"] == (
        "TABLE_ID_AND_SNAPSHOT_TYPE"
    )
    assert tables["sleeper-example-table-index-by-online"]["KeySchema"] == [
        {"AttributeName": "Online", "KeyType": "HASH"},
        {"AttributeName": "TableName", "KeyType": "RANGE"},
    ]
    assert tables["sleeper-example-query-tracking-table"]["TimeToLiveSpecification"] == {
        "AttributeName": "expiryDate",
        "Enabled": True,
    }
    assert tables["sleeper-example-ingest-batcher-store"]["KeySchema"][1]["AttributeName"] == "FilePath"
    assert tables["sleeper-example-ingest-job-lookup"]["GlobalSecondaryIndexes"][0]["IndexName"] == "by-validation"
    assert all(t["BillingMode"] == "PAY_PER_REQUEST" for t in tables.values())
    assert len(tables) == 15


def should_enable_point_in_time_recovery_on_the_state_store_and_table_index_by_default(
    synthesized: Any, reliability: Reliability
) -> None:
    # Given the example leaves sleeper.statestore.dynamo.pointintimerecovery and
    # sleeper.tables.index.dynamo.pointintimerecovery at their defaults (true in this port, false in Sleeper)
    parts = [synthesized.json("StateStore"), synthesized.json("TableIndex")]

    # When
    props = [r["Properties"] for t in parts for r in t["Resources"].values() if r["Type"] == "AWS::DynamoDB::Table"]
    pitr = {p["TableName"]: p["PointInTimeRecoverySpecification"]["PointInTimeRecoveryEnabled"] for p in props}

    # Then the logs (the only copy of each table's state), the snapshots and the index have it
    every_table = [r["Properties"] for _, r in synthesized.resources("AWS::DynamoDB::Table")]
    reliability.record(
        "G5",
        case="DynamoDB tables: encryption at rest, point-in-time recovery on the log, snapshot and index tables",
        tables=len(every_table),
        log_snapshot_index_tables=len(pitr),
        log_snapshot_index_tables_without_pitr=sum(not on for on in pitr.values()),
        # DynamoDB encrypts every table at rest; SSESpecification only chooses a KMS key instead of the owned one
        tables_with_kms_key=sum(bool(p.get("SSESpecification", {}).get("SSEEnabled")) for p in every_table),
        tables_with_sse_disabled=sum(p.get("SSESpecification", {}).get("SSEEnabled") is False for p in every_table),
    )
    assert pitr == {
        "sleeper-example-file-transaction-log": True,
        "sleeper-example-partition-transaction-log": True,
        "sleeper-example-transaction-log-latest-snapshots": True,
        "sleeper-example-transaction-log-all-snapshots": True,
        "sleeper-example-table-index-by-name": True,
        "sleeper-example-table-index-by-id": True,
        "sleeper-example-table-index-by-online": True,
    }


def should_secure_every_bucket(synthesized: Any, reliability: Reliability) -> None:
    # Given
    buckets = synthesized.resources("AWS::S3::Bucket")
    policies = synthesized.resources("AWS::S3::BucketPolicy")

    # Then
    blocks = ("BlockPublicAcls", "BlockPublicPolicy", "IgnorePublicAcls", "RestrictPublicBuckets")
    bucket_props = [b["Properties"] for _, b in buckets]
    reliability.record(
        "G3",
        case="S3 buckets: public access blocks, SSE, TLS-only policy, object ownership",
        buckets=len(buckets),
        without_all_public_access_blocks=sum(
            not all(p.get("PublicAccessBlockConfiguration", {}).get(b) is True for b in blocks) for p in bucket_props
        ),
        without_sse=sum("BucketEncryption" not in p for p in bucket_props),
        tls_only_denies=sum(
            s["Effect"] == "Deny" and s.get("Condition") == {"Bool": {"aws:SecureTransport": "false"}}
            for _, p in policies
            for s in p["Properties"]["PolicyDocument"]["Statement"]
        ),
        ownership=sorted(
            {
                rule.get("ObjectOwnership", "none")
                for p in bucket_props
                for rule in p.get("OwnershipControls", {}).get("Rules", [{}])
            }
        ),
    )
    for _, bucket in buckets:
        properties = bucket["Properties"]
        assert properties["PublicAccessBlockConfiguration"] == {
            "BlockPublicAcls": True,
            "BlockPublicPolicy": True,
            "IgnorePublicAcls": True,
            "RestrictPublicBuckets": True,
        }
        encryption = properties["BucketEncryption"]["ServerSideEncryptionConfiguration"][0]
        assert encryption["ServerSideEncryptionByDefault"]["SSEAlgorithm"] == "AES256"
    tls_denies = [
        s
        for _, p in policies
        for s in p["Properties"]["PolicyDocument"]["Statement"]
        if s["Effect"] == "Deny" and s.get("Condition") == {"Bool": {"aws:SecureTransport": "false"}}
    ]
    assert len(tls_denies) == len(buckets) == 7


def should_expire_query_results(synthesized: Any) -> None:
    # Given
    template = synthesized.template("Query")

    # Then
    template.has_resource_properties(
        "AWS::S3::Bucket",
        {
            "BucketName": {"Fn::Join": ["", ["sleeper-example-query-results-", {"Ref": "AWS::AccountId"}]]},
            "LifecycleConfiguration": {"Rules": [Match.object_like({"ExpirationInDays": 7, "Status": "Enabled"})]},
        },
    )


def should_give_every_function_the_config_bucket_and_its_handler(synthesized: Any) -> None:
    # Given
    functions = synthesized.resources("AWS::Lambda::Function")
    ours = [f for _, f in functions if "SLEEPER_HANDLER" in f["Properties"].get("Environment", {}).get("Variables", {})]

    # Then
    assert len(ours) >= 25
    for function in ours:
        properties = function["Properties"]
        variables = properties["Environment"]["Variables"]
        assert variables["SLEEPER_INSTANCE_ID"] == ID
        assert "CONFIG_BUCKET" in variables
        assert properties["PackageType"] == "Image"
        handler = variables["SLEEPER_HANDLER"]
        assert properties["ImageConfig"]["Command"] == [handler.replace(":", ".")]
        assert properties["FunctionName"].startswith("sleeper-example-")
        assert len(properties["FunctionName"]) <= 64


def _schedules(synthesized: Any) -> dict[str, str]:
    return {
        r["Properties"]["Name"]: r["Properties"]["ScheduleExpression"]
        for _, r in synthesized.resources("AWS::Events::Rule")
        if "ScheduleExpression" in r["Properties"]
    }


def should_schedule_rules_with_the_periods_of_spec_12(synthesized: Any) -> None:
    # When
    schedules = _schedules(synthesized)

    # Then
    assert schedules == {
        "example-BulkExportJobCreationRule": "rate(1 minute)",
        "example-CompactionJobCreationRule": "rate(1 minute)",
        "example-CompactionTasksCreationRule": "rate(1 minute)",
        "example-FindPartitionsToSplitPeriodicTrigger": "rate(30 minutes)",
        "example-GarbageCollectorPeriodicTrigger": "rate(15 minutes)",
        "example-IcebergPublishRule": "rate(10 minutes)",
        "example-IngestTasksCreationRule": "rate(1 minute)",
        "example-IngestBatcherJobCreationRule": "rate(1 minute)",
        "example-MetricsPublishRule": "rate(1 minute)",
        "example-QueryWarmLambdaRule": "rate(5 minutes)",
        "example-TransactionLogSnapshotCreationRule": "rate(1 minute)",
        "example-TransactionLogSnapshotDeletionRule": "rate(1 hour)",
        "example-TransactionLogTransactionDeletionRule": "rate(1 hour)",
    }


def should_feed_per_table_handlers_from_fifo_queues_one_table_at_a_time(synthesized: Any) -> None:
    # Given
    template = synthesized.template("GarbageCollector")

    # Then
    template.has_resource_properties(
        "AWS::Lambda::EventSourceMapping",
        {
            "BatchSize": 1,
            "FunctionResponseTypes": ["ReportBatchItemFailures"],
            "EventSourceArn": {"Fn::GetAtt": [Match.string_like_regexp("GarbageCollectorQueue.*"), "Arn"]},
        },
    )
    template.has_resource_properties("AWS::SQS::Queue", {"QueueName": "sleeper-example-GCJobQ.fifo", "FifoQueue": True})


def should_batch_the_committer_and_compaction_commits(synthesized: Any) -> None:
    # Then
    synthesized.template("StateStoreCommitter").has_resource_properties(
        "AWS::Lambda::EventSourceMapping", {"BatchSize": 10}
    )
    synthesized.template("StateStoreCommitter").has_resource_properties(
        "AWS::Lambda::Function",
        {"FunctionName": "sleeper-example-statestore-committer", "ReservedConcurrentExecutions": 10},
    )
    synthesized.template("Compaction").has_resource_properties(
        "AWS::Lambda::EventSourceMapping",
        {"BatchSize": 1000, "MaximumBatchingWindowInSeconds": 30, "ScalingConfig": {"MaximumConcurrency": 2}},
    )


def should_follow_the_files_log_stream(synthesized: Any) -> None:
    # Then
    synthesized.template("StateStoreUpkeep").has_resource_properties(
        "AWS::Lambda::EventSourceMapping", {"StartingPosition": "LATEST", "BisectBatchOnFunctionError": True}
    )


def should_run_compaction_on_fargate_and_ec2(synthesized: Any) -> None:
    # Given
    template = synthesized.template("Compaction")

    # Then
    template.has_resource_properties(
        "AWS::ECS::TaskDefinition",
        {
            "Family": "sleeper-example-CompactionTaskOnFargate",
            "Cpu": "4096",
            "Memory": "8192",
            "RuntimePlatform": {"CpuArchitecture": "ARM64", "OperatingSystemFamily": "LINUX"},
            "RequiresCompatibilities": ["FARGATE"],
        },
    )
    template.has_resource_properties(
        "AWS::ECS::TaskDefinition", {"Family": "sleeper-example-CompactionTaskOnEC2", "NetworkMode": "bridge"}
    )
    template.has_resource_properties("AWS::ECS::Cluster", {"ClusterName": "sleeper-example-compaction-cluster"})
    template.has_resource_properties(
        "AWS::AutoScaling::AutoScalingGroup",
        {"AutoScalingGroupName": "sleeper-example-compaction-ec2-pool", "MinSize": "0", "MaxSize": "75"},
    )
    template.has_resource_properties(
        "AWS::EC2::LaunchTemplate",
        {
            "LaunchTemplateData": Match.object_like(
                {"BlockDeviceMappings": [Match.object_like({"Ebs": Match.object_like({"Encrypted": True})})]}
            )
        },
    )


def should_run_ingest_tasks_and_start_them_every_minute(synthesized: Any) -> None:
    # Given
    template = synthesized.template("Ingest")

    # Then
    template.has_resource_properties(
        "AWS::ECS::TaskDefinition",
        {
            "Family": "sleeper-example-IngestTask",
            "Cpu": "2048",
            "Memory": "4096",
            "ContainerDefinitions": [
                Match.object_like(
                    {
                        "Name": "IngestTask",
                        "Environment": Match.array_with([{"Name": "SLEEPER_INSTANCE_ID", "Value": ID}]),
                    }
                )
            ],
        },
    )
    template.has_resource_properties("AWS::ECS::Cluster", {"ClusterName": "sleeper-example-ingest-cluster"})


def should_deploy_emr_serverless_with_the_bulk_import_image(synthesized: Any) -> None:
    # Then
    synthesized.template("EmrServerlessBulkImport").has_resource_properties(
        "AWS::EMRServerless::Application",
        {"Type": "SPARK", "ReleaseLabel": "emr-7.12.0", "ImageConfiguration": {"ImageUri": Match.any_value()}},
    )


def should_write_instance_properties_with_every_deployed_resource(synthesized: Any) -> None:
    # Given
    text = synthesized.stack.core.cdk_properties

    # Then
    for key in (
        "sleeper.config.bucket",
        "sleeper.data.bucket",
        "sleeper.ingest.job.queue.url",
        "sleeper.ingest.batcher.submit.queue.url",
        "sleeper.bulk.import.emr.serverless.job.queue.url",
        "sleeper.bulk.import.emr.job.queue.url",
        "sleeper.bulk.import.persistent.emr.job.queue.url",
        "sleeper.bulk.import.persistent.emr.cluster.name",
        "sleeper.query.queue.url",
        "sleeper.query.results.bucket",
        "sleeper.query.tracker.table.name",
        "sleeper.statestore.committer.queue.url",
        "sleeper.compaction.job.queue.url",
        "sleeper.compaction.cluster",
        "sleeper.tables.name.index.dynamo.table",
        "sleeper.statestore.transactionlog.dynamo.file.log.table",
        "sleeper.gc.rule",
    ):
        assert key in text, key
    writer = synthesized.json("Instance")["Resources"]
    custom = [r for r in writer.values() if r["Type"] == "Custom::AWS"]
    assert len(custom) == 1
    create = custom[0]["Properties"]["Create"]
    assert "instance.properties" in str(create)
    assert "sleeper.optional.stacks" in str(create)


def should_read_back_the_properties_text_as_java_properties() -> None:
    # Given
    from sleeper.core.properties import InstanceProperties

    properties = InstanceProperties({"sleeper.id": "abc", "sleeper.tags": "a,b"})

    # When
    text = javaprops.dump(properties.to_dict())

    # Then
    assert javaprops.load(text) == {"sleeper.id": "abc", "sleeper.tags": "a,b"}


def should_tag_every_taggable_resource(synthesized: Any) -> None:
    # Given
    buckets = synthesized.resources("AWS::S3::Bucket")

    # Then
    for _, bucket in buckets:
        tags = {t["Key"]: t["Value"] for t in bucket["Properties"]["Tags"]}
        assert tags["project"] == "sleeper"
        assert tags["DeploymentStack"] == ID


def should_output_the_managed_policies(synthesized: Any) -> None:
    # Given
    outputs = synthesized.json("Instance")["Outputs"]

    # Then
    assert {
        "IngestPolicyArn",
        "QueryPolicyArn",
        "DirectQueryPolicyArn",
        "AdminPolicyArn",
        "ConfigBucketName",
    } <= set(outputs)
    names = _names(synthesized, "AWS::IAM::ManagedPolicy", "ManagedPolicyName")
    assert names == {
        "sleeper-example-IngestPolicy",
        "sleeper-example-QueryPolicy",
        "sleeper-example-DirectQueryPolicy",
        "sleeper-example-AdminPolicy",
    }


def should_name_functions_without_collisions(synthesized: Any) -> None:
    # When
    names = [r["Properties"]["FunctionName"] for _, r in synthesized.resources("AWS::Lambda::Function")
             if "FunctionName" in r["Properties"]]  # fmt: skip

    # Then
    assert len(names) == len(set(names))
    # Sleeper's own names, one with an underscore: sleeper-<id>-bulk-export_planner
    assert all(
        re.fullmatch(r"sleeper-example-[a-z0-9-]+", n) for n in names if n != "sleeper-example-bulk-export_planner"
    )
    assert "sleeper-example-bulk-export_planner" in names
