"""An AWS instance on this process's moto server, built as a deployment leaves it: buckets, DynamoDB tables, the
queues the tests use and ``instance.properties`` in the config bucket. The handlers find it from the environment."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from sleeper.core.operations import (
    INGEST_JOB_Q,
    LEAF_PARTITION_QUERY_Q,
    QUERY_Q,
    QUERY_RESULTS_Q,
    SNAPSHOT_CREATION_Q,
    STATE_STORE_COMMITTER_Q,
)
from sleeper.emulator.provision import provision_instance
from sleeper.lambdas._common import use_instance
from sleeper.runtime.aws.instance import AwsInstance
from tests.contract.aws_backends import REGION, aws_settings, moto_endpoint, new_instance_id

QUEUES = (INGEST_JOB_Q, QUERY_Q, LEAF_PARTITION_QUERY_Q, QUERY_RESULTS_Q, STATE_STORE_COMMITTER_Q, SNAPSHOT_CREATION_Q)


@pytest.fixture(scope="module")
def instance() -> Iterator[AwsInstance]:
    """A new instance, found by the handlers through ``CONFIG_BUCKET`` and the AWS environment variables."""
    config = provision_instance(aws_settings(), new_instance_id(), queues=QUEUES)
    with pytest.MonkeyPatch.context() as env:
        env.setenv("CONFIG_BUCKET", config.config_bucket)
        env.setenv("AWS_REGION", REGION)
        env.setenv("AWS_ENDPOINT_URL", moto_endpoint())
        env.setenv("AWS_ACCESS_KEY_ID", "testing")
        env.setenv("AWS_SECRET_ACCESS_KEY", "testing")
        use_instance(None)
        from_env = AwsInstance.from_environment()
        use_instance(from_env)
        yield from_env
        use_instance(None)


def sqs_event(queue_messages: list[tuple[str, str, str | None]]) -> dict[str, object]:
    """An SQS event as Lambda delivers it, from (message id, body, message group) triples."""
    records = []
    for message_id, body, group in queue_messages:
        attributes = {"ApproximateReceiveCount": "1"}
        if group is not None:
            attributes["MessageGroupId"] = group
        records.append({"messageId": message_id, "body": body, "attributes": attributes, "eventSource": "aws:sqs"})
    return {"Records": records}


def drain_event(instance: AwsInstance, logical_name: str, *, max_messages: int = 10) -> dict[str, object]:
    """Receives every visible message of a queue (and deletes them) and returns them as one SQS event."""
    queue = instance.queue(logical_name)
    received = []
    while len(received) < max_messages:
        batch = queue.receive(min(10, max_messages - len(received)))
        if not batch:
            break
        for message in batch:
            received.append((message.message_id, message.body, message.group_id))
            queue.delete(message.receipt_handle)
    return sqs_event(received)


def create_compaction_jobs_through_handlers(instance: AwsInstance, table_id: str) -> list[str]:
    """Runs compaction job creation for a table as the deployment does: its Lambda, then, for the pending batches it
    made (its table assigning input files through the committer, Sleeper's default), the state store committer's and
    the dispatcher's Lambdas over what it sent. Returns the job messages then on the compaction job queue (taken).
    """
    from sleeper.core.operations import COMPACTION_JOB_Q, PENDING_COMPACTION_JOB_BATCH_Q
    from sleeper.lambdas import sqs

    no_failures = {"batchItemFailures": []}
    assert sqs.compaction_job_creation(sqs_event([("creation", table_id, table_id)])) == no_failures
    commits = drain_event(instance, STATE_STORE_COMMITTER_Q, max_messages=100)
    if commits["Records"]:
        assert sqs.statestore_committer(commits) == no_failures
    pending = drain_event(instance, PENDING_COMPACTION_JOB_BATCH_Q, max_messages=100)
    if pending["Records"]:
        assert sqs.compaction_job_dispatcher(pending) == no_failures
    records = drain_event(instance, COMPACTION_JOB_Q, max_messages=100)["Records"]
    assert isinstance(records, list)
    return [str(record["body"]) for record in records]
