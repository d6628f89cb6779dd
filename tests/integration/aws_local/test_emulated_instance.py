"""The emulated AWS instance: what a plain boto3 client sees on it, and what the pump delivers (scheduled events, SQS
batches with partial failures and dead letters, ECS tasks and EMR Serverless job runs as local processes)."""

from __future__ import annotations

import configparser
import json
import os
import uuid
from pathlib import Path
from typing import Any

import boto3
import pytest

from sleeper.adapters.aws.clients import ecs_client
from sleeper.adapters.aws.launchers.ecs import ingest_task_launcher
from sleeper.core import naming, operations
from sleeper.core.exceptions import SleeperError
from sleeper.core.naming import InstanceNames
from sleeper.core.operations import ContainerSpec, HandlerSpec, Trigger
from sleeper.core.properties import InstanceProperties
from sleeper.emulator.instance import EmulatedAwsInstance
from sleeper.emulator.pump import Pump
from sleeper.runtime.aws.instance import queue_url_properties
from tests.integration.aws_local.fake_handlers import EVENTS, OUT_ENV, SEEN_INSTANCES

pytestmark = [pytest.mark.integration, pytest.mark.aws]

_FAKES = "tests.integration.aws_local.fake_handlers"


def _client(emulated: EmulatedAwsInstance, service: str) -> Any:
    return boto3.client(service, endpoint_url=emulated.endpoint, region_name=emulated.region)


def _pump(emulated: EmulatedAwsInstance, *handlers: HandlerSpec, **options: Any) -> Pump:
    return emulated.pump(handlers=handlers, containers=(), **options)


def _sqs_handler(queue: str, *, batch_size: int = 10) -> HandlerSpec:
    return HandlerSpec(
        name=f"fake-{queue}", handler=f"{_FAKES}:sqs", description="", trigger=Trigger.sqs(queue, batch_size=batch_size)
    )


def _send(emulated: EmulatedAwsInstance, queue: str, *bodies: str) -> None:
    target = emulated.instance().queue(queue)
    fifo = queue.endswith(".fifo")
    for body in bodies:
        target.send(body, group_id="g1" if fifo else None, dedup_id=uuid.uuid4().hex if fifo else None)


def should_show_a_plain_boto3_client_the_config_bucket_with_every_queue_url(emulated: EmulatedAwsInstance) -> None:
    # Given a boto3 client given only the endpoint (credentials and region from the environment)
    s3 = _client(emulated, "s3")
    account = _client(emulated, "sts").get_caller_identity()["Account"]
    # When it reads instance.properties from the bucket Sleeper's client derives
    bucket = naming.config_bucket_name(emulated.instance_id, account)
    text = s3.get_object(Bucket=bucket, Key="instance.properties")["Body"].read().decode()
    parser = configparser.ConfigParser(allow_no_value=True)
    parser.read_string("[s]\n" + text)
    # Then every queue URL property names the queue the stacks would create
    values = dict(parser["s"].items())
    for logical, prop in queue_url_properties().items():
        assert values[prop].endswith("/" + naming.queue_name(emulated.instance_id, logical)), prop
    assert values["sleeper.data.bucket"] == naming.data_bucket_name(emulated.instance_id, account)


def should_name_clusters_tasks_rules_and_buckets_as_the_stacks_do(emulated: EmulatedAwsInstance) -> None:
    # Given the names the stacks give an instance's resources
    instance_id, account = emulated.instance_id, emulated.account
    names = InstanceNames(instance_id=instance_id, account=account)
    # When the emulated instance's resources are listed
    clusters = _client(emulated, "ecs").describe_clusters(clusters=[names.ingest_cluster, names.compaction_cluster])
    rules = {r["Name"] for r in _client(emulated, "events").list_rules(NamePrefix=instance_id)["Rules"]}
    buckets = {b["Name"] for b in _client(emulated, "s3").list_buckets()["Buckets"]}
    properties = InstanceProperties(emulated.instance().properties_store.load_instance())
    # Then they carry the stacks' names, and the instance properties name them
    assert names.ingest_cluster == naming.function_name(instance_id, "ingest-cluster")
    assert names.compaction_cluster == naming.function_name(instance_id, "compaction-cluster")
    assert names.ingest_task_family == naming.function_name(instance_id, "IngestTask")
    assert names.compaction_fargate_family == naming.function_name(instance_id, "CompactionTaskOnFargate")
    assert names.emr_serverless_application == naming.function_name(instance_id, "bulk-import")
    assert [c["status"] for c in clusters["clusters"]] == ["ACTIVE", "ACTIVE"]
    assert naming.rule_name(instance_id, naming.INGEST_TASK_CREATION_RULE) in rules
    assert naming.rule_name(instance_id, naming.COMPACTION_JOB_CREATION_RULE) in rules
    assert naming.bulk_import_bucket_name(instance_id, account) in buckets
    assert properties.get("sleeper.ingest.cluster") == names.ingest_cluster
    assert properties.get("sleeper.ingest.task.definition.family") == names.ingest_task_family


def should_deliver_an_sqs_batch_as_lambda_does_and_delete_only_what_succeeded(emulated: EmulatedAwsInstance) -> None:
    # Given two messages on a FIFO queue, one the handler will fail
    queue = operations.METRICS_JOB_Q
    _send(emulated, queue, "ok-1", "fail-2")
    pump = _pump(emulated, _sqs_handler(queue), retry_failed_after_seconds=0)
    EVENTS.clear()
    # When the pump runs a round
    first = pump.run_once()
    # Then the handler got both in one SQS event shaped as Lambda's
    records = EVENTS[0]["Records"]
    assert [r["body"] for r in records] == ["ok-1", "fail-2"]
    assert {r["eventSource"] for r in records} == {"aws:sqs"}
    assert records[0]["eventSourceARN"].endswith(":" + naming.queue_name(emulated.instance_id, queue))
    assert records[0]["attributes"]["MessageGroupId"] == "g1"
    assert records[0]["attributes"]["ApproximateReceiveCount"] == "1"
    assert {"messageId", "receiptHandle", "md5OfBody", "awsRegion"} <= set(records[0])
    assert (first.delivered, first.failed) == ({f"fake-{queue}": 2}, {f"fake-{queue}": 1})
    # And only the failed one is delivered again
    second = pump.run_once()
    assert [r["body"] for r in EVENTS[1]["Records"]] == ["fail-2"]
    assert EVENTS[1]["Records"][0]["attributes"]["ApproximateReceiveCount"] == "2"
    assert second.delivered == {f"fake-{queue}": 1}


def should_give_a_handler_the_environment_of_its_deployed_function(
    emulated: EmulatedAwsInstance, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a process whose environment names no instance, and a handler finding its instance as deployed ones do
    for name in emulated.environment():
        monkeypatch.delenv(name, raising=False)
    queue = operations.SNAPSHOT_DELETION_Q
    spec = HandlerSpec(name="fake-located", handler=f"{_FAKES}:located", description="", trigger=Trigger.sqs(queue))
    _send(emulated, queue, "where-am-i")
    pump = _pump(emulated, spec)
    SEEN_INSTANCES.clear()
    # When the pump delivers to it
    delivered = pump.run_once()
    # Then it ran in the function's environment (CONFIG_BUCKET and the endpoint) and found the emulated instance
    assert delivered.delivered == {"fake-located": 1}
    assert SEEN_INSTANCES == [
        {
            "config_bucket": emulated.config.config_bucket,
            "endpoint": emulated.endpoint,
            "CONFIG_BUCKET": emulated.config.config_bucket,
            "AWS_ENDPOINT_URL": emulated.endpoint,
        }
    ]
    # And this process's environment is as it was
    assert "CONFIG_BUCKET" not in os.environ and "AWS_ENDPOINT_URL" not in os.environ


def should_move_a_message_failing_every_delivery_to_the_dead_letter_queue(emulated: EmulatedAwsInstance) -> None:
    # Given a message its handler always fails, on a queue whose redrive policy allows 3 receives
    queue = operations.BULK_IMPORT_EMR_Q
    _send(emulated, queue, "fail-always")
    pump = _pump(emulated, _sqs_handler(queue), retry_failed_after_seconds=0)
    # When the pump runs until nothing is delivered
    summary = pump.run_until_idle(timeout_seconds=60)
    # Then it was delivered three times and now waits in the dead-letter queue
    assert summary.failed == {f"fake-{queue}": 3}
    instance = emulated.instance()
    assert instance.queue(queue).approximate_counts().visible == 0
    assert instance.dead_letter_queue(queue).approximate_counts().visible == 1


def should_fire_a_schedule_when_its_period_passes_unless_its_rule_is_disabled(emulated: EmulatedAwsInstance) -> None:
    # Given a handler on the ingest task creation rule (period 1 minute) and a pump whose clock starts at 1000
    spec = HandlerSpec(
        name="fake-schedule",
        handler=f"{_FAKES}:scheduled",
        description="",
        trigger=Trigger.schedule(naming.INGEST_TASK_CREATION_RULE, "sleeper.ingest.task.creation.period.minutes"),
    )
    pump = _pump(emulated, spec, clock=lambda: 1000.0)
    EVENTS.clear()
    # When rounds run before, after and a period after that, the last with the rule disabled
    early = pump.run_once(now=1059.0)
    due = pump.run_once(now=1061.0)
    rule = naming.rule_name(emulated.instance_id, naming.INGEST_TASK_CREATION_RULE)
    events = _client(emulated, "events")
    events.disable_rule(Name=rule)
    try:
        paused = pump.run_once(now=1130.0)
    finally:
        events.enable_rule(Name=rule)
    # Then it fired once, with EventBridge's scheduled event naming the rule
    assert (early.fired, due.fired, paused.fired) == ([], ["fake-schedule"], [])
    assert len(EVENTS) == 1
    assert EVENTS[0]["detail-type"] == "Scheduled Event"
    assert EVENTS[0]["source"] == "aws.events"
    assert EVENTS[0]["resources"] == [f"arn:aws:events:{emulated.region}:{emulated.account}:rule/{rule}"]


def should_skip_a_handler_until_its_module_exists(
    emulated: EmulatedAwsInstance, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a message for a handler whose module is not written yet
    module = f"late_handler_{uuid.uuid4().hex[:8]}"
    queue = operations.INGEST_BATCHER_SUBMIT_Q
    monkeypatch.syspath_prepend(str(tmp_path))
    spec = HandlerSpec(name="late", handler=f"{module}:handler", description="", trigger=Trigger.sqs(queue))
    pump = _pump(emulated, spec)
    _send(emulated, queue, "waiting")
    # When a round runs, then the module is written and another round runs
    before = pump.run_once()
    (tmp_path / f"{module}.py").write_text(
        "SEEN = []\ndef handler(event, context=None):\n    SEEN.extend(r['body'] for r in event['Records'])\n"
    )
    after = pump.run_once()
    # Then the message waited on the queue for the handler, which got it once it existed
    assert before.delivered == {}
    assert after.delivered == {"late": 1}
    assert __import__(module).SEEN == ["waiting"]


def should_run_an_ecs_task_as_a_local_process_of_its_container_and_stop_it(
    emulated: EmulatedAwsInstance, tmp_path: Path
) -> None:
    # Given an ingest task started by RunTask as the ingest task creator starts it, and an ingest container whose
    # entry point records how it was run
    instance = emulated.instance()
    launched = ingest_task_launcher(ecs_client(emulated.settings), instance.properties).launch_tasks(1)
    container = ContainerSpec(name=operations.INGEST_IMAGE, description="", entry_point=f"{_FAKES}:entry_point")
    pump = emulated.pump(handlers=(), containers=(container,), environment_extra={OUT_ENV: str(tmp_path)})
    # When the pump runs until idle
    summary = pump.run_until_idle(timeout_seconds=60)
    # Then the entry point ran once with the task's command and environment, and the task is stopped
    (record,) = [json.loads(p.read_text()) for p in tmp_path.glob("*.json")]
    assert launched == 1
    assert [code for _, code in summary.tasks_finished] == [0]
    assert record["argv"] == [instance.config.config_bucket]
    assert record["env"]["CONFIG_BUCKET"] == instance.config.config_bucket
    assert record["env"]["AWS_ENDPOINT_URL"] == emulated.endpoint
    assert record["env"]["SLEEPER_INSTANCE_ID"] == emulated.instance_id
    cluster = instance.properties.get("sleeper.ingest.cluster")
    ecs = _client(emulated, "ecs")
    assert ecs.list_tasks(cluster=cluster, desiredStatus="RUNNING")["taskArns"] == []


def should_run_an_emr_serverless_job_run_with_its_driver_arguments(
    emulated: EmulatedAwsInstance, tmp_path: Path
) -> None:
    # Given a job run started on the instance's application as the bulk import starter starts it
    properties = emulated.instance().properties
    application = properties.get("sleeper.bulk.import.emr.serverless.application.id")
    arguments = [emulated.config.config_bucket, "job-1", "task-1", "run-1", "EMR"]
    client = _client(emulated, "emr-serverless")
    run = client.start_job_run(
        applicationId=application,
        executionRoleArn=properties.get("sleeper.bulk.import.emr.serverless.role.arn"),
        name="job-run-1",
        jobDriver={"sparkSubmit": {"entryPoint": "local:///driver.py", "entryPointArguments": arguments}},
    )
    container = ContainerSpec(name=operations.BULK_IMPORT_IMAGE, description="", entry_point=f"{_FAKES}:entry_point")
    pump = emulated.pump(handlers=(), containers=(container,), environment_extra={OUT_ENV: str(tmp_path)})
    # When the pump runs until idle
    pump.run_until_idle(timeout_seconds=60)
    # Then the bulk import entry point ran once with the driver's arguments (the pump also runs what earlier tests of
    # the module left for the same image, such as an EMR step, with their own arguments), and the job run is over
    records = [json.loads(p.read_text()) for p in tmp_path.glob("*.json")]
    assert [r["argv"] for r in records if r["argv"] == arguments] == [arguments]
    state = client.get_job_run(applicationId=application, jobRunId=run["jobRunId"])["jobRun"]["state"]
    assert state == "CANCELLED"


def should_refuse_a_port_that_is_taken(emulated: EmulatedAwsInstance) -> None:
    # Given the port the emulated instance listens on
    port = int(emulated.endpoint.rsplit(":", 1)[1])
    # When another emulated instance is started on it
    # Then it is refused with the reason
    with pytest.raises(SleeperError, match=f"cannot serve on 127.0.0.1:{port}"):
        EmulatedAwsInstance("other", port=port).start()
