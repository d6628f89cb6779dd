"""What an emulated AWS instance (``sleeper.emulator``) needs from AWS beyond the runtime's adapters: the
resources a deployment creates that the runtime only reads (ECS clusters and task definitions, the EMR Serverless
application, EventBridge rules), and what the AWS services themselves do with them, which an emulator (a moto
server) only records: SQS event source mappings receiving batches for Lambda, ECS tasks started by ``RunTask``, EMR
Serverless job runs and EMR steps.

Every function takes a boto3 client built from :class:`~sleeper.adapters.aws.clients.AwsSettings` by the builders of
:mod:`sleeper.adapters.aws.clients`. ECS, EMR, EMR Serverless, EventBridge, DynamoDB Streams and EC2 clients are
typed ``Any`` (no stubs installed).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from botocore.exceptions import BotoCoreError, ClientError

from sleeper.adapters.aws import queue_arn, translate

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient

__all__ = [
    "DynamoDBStreamSource",
    "EcsTask",
    "EmrServerlessJobRun",
    "EmrStep",
    "Network",
    "SqsEventSource",
    "active_emr_steps",
    "cancel_emr_serverless_job_run",
    "create_ecs_cluster",
    "create_network",
    "create_emr_serverless_application",
    "emr_serverless_job_runs",
    "put_schedule_rule",
    "register_task_definition",
    "rule_state",
    "running_ecs_tasks",
    "schedule_expression",
    "stop_ecs_task",
    "terminate_emr_cluster",
]

_ENDED_JOB_RUN_STATES = frozenset({"FAILED", "CANCELLED", "CANCELLING"})
"""Not SUCCESS: moto reports every job run SUCCESS as soon as it is started."""
_ACTIVE_CLUSTER_STATES = ["STARTING", "BOOTSTRAPPING", "RUNNING", "WAITING"]


# --- SQS: what Lambda's event source mapping does --------------------------------------------------------------------


class SqsEventSource:
    """Receives batches from a queue as Lambda's SQS event source mapping does, as the records of an SQS event.

    Args:
        client: An SQS client.
        queue_url: The queue.
        region: The region, given in each record as ``awsRegion``.
    """

    def __init__(self, client: SQSClient, queue_url: str, region: str) -> None:
        self._client = client
        self.queue_url = queue_url
        self._region = region
        self._arn: str | None = None

    @property
    def arn(self) -> str:
        """The queue's ARN (``eventSourceARN`` of each record), looked up once.

        Raises:
            QueueNotFoundError: If the queue does not exist.
            AwsError: If SQS fails otherwise.
        """
        if self._arn is None:
            self._arn = queue_arn(self._client, self.queue_url)
        return self._arn

    def receive(self, max_messages: int) -> list[dict[str, Any]]:
        """Receives up to ``max_messages`` visible messages (several calls of at most 10) as SQS event records:
        ``messageId``, ``receiptHandle``, ``body``, ``attributes`` (with ``MessageGroupId`` on a FIFO queue),
        ``messageAttributes``, ``md5OfBody``, ``eventSource`` = ``aws:sqs``, ``eventSourceARN`` and ``awsRegion``.

        Raises:
            AwsError: If SQS fails.
        """
        records: list[dict[str, Any]] = []
        while len(records) < max_messages:
            wanted = min(10, max_messages - len(records))
            try:
                response = self._client.receive_message(
                    QueueUrl=self.queue_url,
                    MaxNumberOfMessages=wanted,
                    WaitTimeSeconds=0,
                    MessageSystemAttributeNames=["All"],
                    MessageAttributeNames=["All"],
                )
            except (ClientError, BotoCoreError) as e:
                raise translate(e, f"ReceiveMessage {self.queue_url}") from e
            messages = response.get("Messages", [])
            records.extend(self._record(m) for m in messages)
            if len(messages) < wanted:
                break
        return records

    def _record(self, message: Mapping[str, Any]) -> dict[str, Any]:
        attributes = {str(k): str(v) for k, v in message.get("Attributes", {}).items()}
        return {
            "messageId": message["MessageId"],
            "receiptHandle": message["ReceiptHandle"],
            "body": message["Body"],
            "attributes": attributes,
            "messageAttributes": {
                str(name): _message_attribute(value) for name, value in message.get("MessageAttributes", {}).items()
            },
            "md5OfBody": message.get("MD5OfBody", ""),
            "eventSource": "aws:sqs",
            "eventSourceARN": self.arn,
            "awsRegion": self._region,
        }

    def delete(self, receipt_handles: Sequence[str]) -> None:
        """Deletes received messages (batches of 10); a handle SQS no longer knows is ignored.

        Raises:
            AwsError: If SQS fails.
        """
        for start in range(0, len(receipt_handles), 10):
            chunk = receipt_handles[start : start + 10]
            entries = [{"Id": str(i), "ReceiptHandle": handle} for i, handle in enumerate(chunk)]
            try:
                self._client.delete_message_batch(QueueUrl=self.queue_url, Entries=entries)  # type: ignore[arg-type]
            except (ClientError, BotoCoreError) as e:
                raise translate(e, f"DeleteMessageBatch {self.queue_url}") from e

    def retry_after(self, receipt_handles: Sequence[str], seconds: float) -> None:
        """Makes received messages visible again after ``seconds`` (instead of the queue's visibility timeout).

        Raises:
            AwsError: If SQS fails.
        """
        for start in range(0, len(receipt_handles), 10):
            chunk = receipt_handles[start : start + 10]
            entries = [
                {"Id": str(i), "ReceiptHandle": handle, "VisibilityTimeout": math.ceil(seconds)}
                for i, handle in enumerate(chunk)
            ]
            try:
                self._client.change_message_visibility_batch(QueueUrl=self.queue_url, Entries=entries)  # type: ignore[arg-type]
            except (ClientError, BotoCoreError) as e:
                raise translate(e, f"ChangeMessageVisibilityBatch {self.queue_url}") from e


def _message_attribute(value: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"stringListValues": [], "binaryListValues": [], "dataType": value.get("DataType", "")}
    if "StringValue" in value:
        out["stringValue"] = value["StringValue"]
    if "BinaryValue" in value:
        out["binaryValue"] = value["BinaryValue"]
    return out


# --- DynamoDB streams: what Lambda's stream event source mapping does ------------------------------------------------


class DynamoDBStreamSource:
    """Reads a table's stream as Lambda's DynamoDB event source mapping does: shard by shard, in order, each record in
    the shape Lambda gives it (``eventID``, ``eventName``, ``eventSource`` = ``aws:dynamodb``, ``eventSourceARN``,
    ``awsRegion``, ``dynamodb`` with ``Keys``, ``NewImage``, ``SequenceNumber`` and ``ApproximateCreationDateTime``
    in epoch seconds).

    The shards known when the source is made are read from then on (the mapping's ``LATEST``, taken when it is
    created); shards that appear later are read from their start.

    Args:
        dynamodb: A DynamoDB client.
        streams: A DynamoDB Streams client.
        table_name: The table whose stream is read.
        region: The region, given in each record as ``awsRegion``.
    """

    def __init__(self, dynamodb: Any, streams: Any, table_name: str, region: str) -> None:
        self._dynamodb = dynamodb
        self._streams = streams
        self.table_name = table_name
        self._region = region
        self._arn: str | None = None
        self._iterators: dict[str, str | None] = {}
        self._shard_of: dict[str, str] = {}
        self._refresh(initial=True)

    @property
    def arn(self) -> str | None:
        """The stream's ARN, or None while the table has no stream."""
        return self._arn

    def _refresh(self, *, initial: bool = False) -> None:
        try:
            if self._arn is None:
                table = self._dynamodb.describe_table(TableName=self.table_name)["Table"]
                self._arn = table.get("LatestStreamArn")
                if self._arn is None:
                    return
            shards = self._streams.describe_stream(StreamArn=self._arn)["StreamDescription"].get("Shards", [])
            for shard in shards:
                shard_id = shard["ShardId"]
                if shard_id not in self._iterators:
                    self._iterators[shard_id] = self._iterator(shard_id, "LATEST" if initial else "TRIM_HORIZON")
        except (BotoCoreError, ClientError) as e:
            raise translate(e, f"reading the stream of {self.table_name}") from e

    def _iterator(self, shard_id: str, kind: str, sequence_number: str | None = None) -> str:
        request: dict[str, Any] = {"StreamArn": self._arn, "ShardId": shard_id, "ShardIteratorType": kind}
        if sequence_number is not None:
            request["SequenceNumber"] = sequence_number
        return str(self._streams.get_shard_iterator(**request)["ShardIterator"])

    def receive(self, max_records: int) -> list[dict[str, Any]]:
        """The next records of the first shard that has any, at most ``max_records`` (empty: nothing new).

        Raises:
            AwsError: If DynamoDB Streams fails.
        """
        self._refresh()
        try:
            for shard_id, iterator in list(self._iterators.items()):
                if iterator is None:
                    continue  # closed shard, read to its end
                response = self._streams.get_records(ShardIterator=iterator, Limit=max(1, max_records))
                self._iterators[shard_id] = response.get("NextShardIterator")
                records = [self._lambda_record(r) for r in response.get("Records", [])]
                if records:
                    self._shard_of = {str(r["dynamodb"]["SequenceNumber"]): shard_id for r in records}
                    return records
        except (BotoCoreError, ClientError) as e:
            raise translate(e, f"reading the stream of {self.table_name}") from e
        return []

    def _lambda_record(self, record: Mapping[str, Any]) -> dict[str, Any]:
        out = dict(record)
        change = dict(out.get("dynamodb", {}))
        created = change.get("ApproximateCreationDateTime")
        if created is not None and hasattr(created, "timestamp"):
            change["ApproximateCreationDateTime"] = float(created.timestamp())
        out["dynamodb"] = change
        out["eventSource"] = "aws:dynamodb"
        out["eventSourceARN"] = self._arn
        out["awsRegion"] = self._region
        return out

    def rewind(self, sequence_number: str, *, skip: bool = False) -> None:
        """Reads the record's shard again from the record (``skip``: from the record after it). The record must be
        one of the last batch received; another is ignored.

        Raises:
            AwsError: If DynamoDB Streams fails.
        """
        shard_id = self._shard_of.get(sequence_number)
        if shard_id is None:
            return
        kind = "AFTER_SEQUENCE_NUMBER" if skip else "AT_SEQUENCE_NUMBER"
        try:
            self._iterators[shard_id] = self._iterator(shard_id, kind, sequence_number)
        except (BotoCoreError, ClientError) as e:
            raise translate(e, f"reading the stream of {self.table_name}") from e


# --- EventBridge rules ---------------------------------------------------------------------------------------------


def schedule_expression(period_seconds: int) -> str:
    """The EventBridge rate expression of a period (whole minutes, at least one)."""
    minutes = max(1, math.ceil(period_seconds / 60))
    return f"rate({minutes} minute{'' if minutes == 1 else 's'})"


def put_schedule_rule(events: Any, name: str, period_seconds: int, *, description: str = "") -> None:
    """Creates (or updates) an enabled scheduled rule.

    Raises:
        AwsError: If EventBridge refuses.
    """
    try:
        events.put_rule(
            Name=name, ScheduleExpression=schedule_expression(period_seconds), State="ENABLED", Description=description
        )
    except (ClientError, BotoCoreError) as e:
        raise translate(e, f"PutRule {name}") from e


def rule_state(events: Any, name: str) -> str | None:
    """The state of a rule (``ENABLED``, ``DISABLED``; a paused instance's rules are disabled), or None if there is
    no such rule.

    Raises:
        AwsError: If EventBridge fails other than by not finding the rule.
    """
    try:
        return str(events.describe_rule(Name=name).get("State"))
    except ClientError as e:
        if "ResourceNotFound" in str(e.response.get("Error", {}).get("Code", "")):
            return None
        raise translate(e, f"DescribeRule {name}") from e
    except BotoCoreError as e:
        raise translate(e, f"DescribeRule {name}") from e


# --- networking ----------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class Network:
    """A VPC with one subnet and a security group for ECS tasks.

    Attributes:
        vpc_id: The VPC.
        subnet_id: Its subnet.
        security_group_id: The tasks' security group.
    """

    vpc_id: str
    subnet_id: str
    security_group_id: str


def create_network(ec2: Any, name: str) -> Network:
    """Creates a VPC (10.0.0.0/16) with a subnet (10.0.0.0/24) and a security group named ``name``, which Fargate
    tasks (``awsvpc`` networking) need.

    Args:
        ec2: An EC2 client.
        name: The security group's name.

    Raises:
        AwsError: If EC2 refuses.
    """
    try:
        vpc_id = ec2.create_vpc(CidrBlock="10.0.0.0/16")["Vpc"]["VpcId"]
        subnet_id = ec2.create_subnet(VpcId=vpc_id, CidrBlock="10.0.0.0/24")["Subnet"]["SubnetId"]
        group_id = ec2.create_security_group(GroupName=name, Description="Sleeper ECS tasks", VpcId=vpc_id)["GroupId"]
    except (ClientError, BotoCoreError) as e:
        raise translate(e, f"CreateVpc/CreateSubnet/CreateSecurityGroup {name}") from e
    return Network(vpc_id=vpc_id, subnet_id=subnet_id, security_group_id=group_id)


# --- ECS -----------------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class EcsTask:
    """A task ECS was asked to run and has not stopped.

    Attributes:
        arn: The task ARN.
        cluster: The cluster's name.
        family: The family of its task definition.
        container: The name of its (first) container.
        command: The container's command (from the overrides, else the task definition).
        environment: The container's environment: the task definition's, then the overrides'.
    """

    arn: str
    cluster: str
    family: str
    container: str
    command: tuple[str, ...] = ()
    environment: Mapping[str, str] = field(default_factory=dict)


def create_ecs_cluster(ecs: Any, name: str) -> str:
    """Creates an ECS cluster; returns its ARN.

    Raises:
        AwsError: If ECS refuses.
    """
    try:
        return str(ecs.create_cluster(clusterName=name)["cluster"]["clusterArn"])
    except (ClientError, BotoCoreError) as e:
        raise translate(e, f"CreateCluster {name}") from e


def register_task_definition(
    ecs: Any, family: str, container: str, image: str, *, environment: Mapping[str, str] | None = None
) -> str:
    """Registers a task definition of one container (bridge networking: see below); returns its ARN.

    Raises:
        AwsError: If ECS refuses.
    """
    try:
        response = ecs.register_task_definition(
            family=family,
            # bridge, not Fargate's awsvpc: moto fails RunTask of an awsvpc task (its network interface lacks
            # private_dns_name), and nothing here uses the task's network
            networkMode="bridge",
            cpu="1024",
            memory="4096",
            containerDefinitions=[
                {
                    "name": container,
                    "image": image,
                    "essential": True,
                    "cpu": 1024,
                    "memory": 4096,
                    "environment": [{"name": k, "value": v} for k, v in (environment or {}).items()],
                }
            ],
        )
    except (ClientError, BotoCoreError) as e:
        raise translate(e, f"RegisterTaskDefinition {family}") from e
    return str(response["taskDefinition"]["taskDefinitionArn"])


def running_ecs_tasks(ecs: Any, cluster: str) -> list[EcsTask]:
    """The tasks of a cluster whose desired status is RUNNING.

    Raises:
        AwsError: If ECS fails (a cluster that does not exist has no tasks).
    """
    try:
        arns = [
            a
            for page in ecs.get_paginator("list_tasks").paginate(cluster=cluster, desiredStatus="RUNNING")
            for a in page.get("taskArns", [])
        ]
    except ClientError as e:
        if "ClusterNotFound" in str(e.response.get("Error", {}).get("Code", "")):
            return []
        raise translate(e, f"ListTasks {cluster}") from e
    except BotoCoreError as e:
        raise translate(e, f"ListTasks {cluster}") from e
    out: list[EcsTask] = []
    definitions: dict[str, Mapping[str, Any]] = {}
    for start in range(0, len(arns), 100):
        try:
            tasks = ecs.describe_tasks(cluster=cluster, tasks=arns[start : start + 100]).get("tasks", [])
        except (ClientError, BotoCoreError) as e:
            raise translate(e, f"DescribeTasks {cluster}") from e
        for task in tasks:
            definition_arn = str(task["taskDefinitionArn"])
            if definition_arn not in definitions:
                try:
                    definitions[definition_arn] = ecs.describe_task_definition(taskDefinition=definition_arn)[
                        "taskDefinition"
                    ]
                except (ClientError, BotoCoreError) as e:
                    raise translate(e, f"DescribeTaskDefinition {definition_arn}") from e
            out.append(_ecs_task(cluster, task, definitions[definition_arn]))
    return out


def _ecs_task(cluster: str, task: Mapping[str, Any], definition: Mapping[str, Any]) -> EcsTask:
    containers = definition.get("containerDefinitions") or [{}]
    container = containers[0]
    name = str(container.get("name", ""))
    command = [str(c) for c in container.get("command", [])]
    environment = {str(e["name"]): str(e["value"]) for e in container.get("environment", [])}
    for override in task.get("overrides", {}).get("containerOverrides", []):
        if override.get("name") not in (None, name):
            continue
        if override.get("command"):
            command = [str(c) for c in override["command"]]
        for entry in override.get("environment", []):
            key = entry.get("name", entry.get("Name"))
            value = entry.get("value", entry.get("Value"))
            if key is not None and value is not None:
                environment[str(key)] = str(value)
    return EcsTask(
        arn=str(task["taskArn"]),
        cluster=cluster,
        family=str(definition.get("family", "")),
        container=name,
        command=tuple(command),
        environment=environment,
    )


def stop_ecs_task(ecs: Any, cluster: str, arn: str, reason: str) -> None:
    """Stops a task (its desired and last status become STOPPED).

    Raises:
        AwsError: If ECS refuses.
    """
    try:
        ecs.stop_task(cluster=cluster, task=arn, reason=reason[:255])
    except (ClientError, BotoCoreError) as e:
        raise translate(e, f"StopTask {arn}") from e


# --- EMR Serverless and EMR ----------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class EmrServerlessJobRun:
    """A job run EMR Serverless was asked to start and has not finished.

    Attributes:
        application_id: The application.
        job_run_id: The job run.
        name: Its name.
        entry_point: The Spark driver script.
        arguments: The driver's arguments.
    """

    application_id: str
    job_run_id: str
    name: str
    entry_point: str
    arguments: tuple[str, ...]


def create_emr_serverless_application(client: Any, name: str, release_label: str) -> str:
    """Creates a Spark application; returns its id.

    Raises:
        AwsError: If EMR Serverless refuses.
    """
    try:
        return str(client.create_application(name=name, releaseLabel=release_label, type="SPARK")["applicationId"])
    except (ClientError, BotoCoreError) as e:
        raise translate(e, f"CreateApplication {name}") from e


def emr_serverless_job_runs(client: Any, application_id: str) -> list[EmrServerlessJobRun]:
    """The application's job runs that have not failed or been cancelled, with their drivers (moto reports a job run
    SUCCESS as soon as it starts, so that state does not mean it has run).

    Raises:
        AwsError: If EMR Serverless fails.
    """
    try:
        try:
            summaries = client.list_job_runs(applicationId=application_id).get("jobRuns", [])
        except ClientError as e:
            if "ResourceNotFound" not in str(e.response.get("Error", {}).get("Code", "")):
                raise
            summaries = []  # moto: an application without job runs is "not found"
        out: list[EmrServerlessJobRun] = []
        for summary in summaries:
            if summary.get("state") in _ENDED_JOB_RUN_STATES:
                continue
            run = client.get_job_run(applicationId=application_id, jobRunId=summary["id"])["jobRun"]
            spark = run.get("jobDriver", {}).get("sparkSubmit", {})
            out.append(
                EmrServerlessJobRun(
                    application_id=application_id,
                    job_run_id=str(summary["id"]),
                    name=str(run.get("name", "")),
                    entry_point=str(spark.get("entryPoint", "")),
                    arguments=tuple(str(a) for a in spark.get("entryPointArguments", [])),
                )
            )
        return out
    except (ClientError, BotoCoreError) as e:
        raise translate(e, f"ListJobRuns {application_id}") from e


def cancel_emr_serverless_job_run(client: Any, application_id: str, job_run_id: str) -> None:
    """Ends a job run (moto's only transition out of running is CANCELLED).

    Raises:
        AwsError: If EMR Serverless refuses.
    """
    try:
        client.cancel_job_run(applicationId=application_id, jobRunId=job_run_id)
    except (ClientError, BotoCoreError) as e:
        raise translate(e, f"CancelJobRun {job_run_id}") from e


@dataclass(frozen=True, slots=True, kw_only=True)
class EmrStep:
    """A step of an active EMR cluster that has not run.

    Attributes:
        cluster_id: The cluster.
        cluster_name: Its name.
        step_id: The step.
        arguments: The step's command (``spark-submit ...``).
    """

    cluster_id: str
    cluster_name: str
    step_id: str
    arguments: tuple[str, ...]


def active_emr_steps(client: Any) -> list[EmrStep]:
    """The pending and running steps of every active EMR cluster.

    Raises:
        AwsError: If EMR fails.
    """
    try:
        clusters = client.list_clusters(ClusterStates=_ACTIVE_CLUSTER_STATES).get("Clusters", [])
        out: list[EmrStep] = []
        for cluster in clusters:
            steps = client.list_steps(ClusterId=cluster["Id"], StepStates=["PENDING", "RUNNING"]).get("Steps", [])
            for step in reversed(steps):  # EMR lists the newest first
                args = step.get("Config", {}).get("Args", [])
                out.append(
                    EmrStep(
                        cluster_id=str(cluster["Id"]),
                        cluster_name=str(cluster.get("Name", "")),
                        step_id=str(step["Id"]),
                        arguments=tuple(str(a) for a in args),
                    )
                )
        return out
    except (ClientError, BotoCoreError) as e:
        raise translate(e, "ListClusters/ListSteps") from e


def terminate_emr_cluster(client: Any, cluster_id: str) -> None:
    """Terminates an EMR cluster.

    Raises:
        AwsError: If EMR refuses.
    """
    try:
        client.terminate_job_flows(JobFlowIds=[cluster_id])
    except (ClientError, BotoCoreError) as e:
        raise translate(e, f"TerminateJobFlows {cluster_id}") from e
