"""Building blocks every Sleeper stack uses: secure buckets, queues with dead letters and alarms, Lambda functions
from the one Lambda image, scheduled per-table triggers, and the shared core resources optional stacks build on."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TypeVar

import aws_cdk as cdk
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_cloudwatch_actions as cw_actions
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_lambda_event_sources as sources
from aws_cdk import aws_logs as logs
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from sleeper.cdk import grants, nag
from sleeper.cdk.artefacts import Images
from sleeper.cdk.context import DeployContext
from sleeper.core import HandlerSpec, naming, operation_wiring, operations, user_wheel_keys
from sleeper.core.deploy import deploys_dynamodb_state_store, jars_bucket_name
from sleeper.core.properties import PropertyDefinition
from sleeper.core.properties import instance_common as common

CONFIG_BUCKET_ENV = "CONFIG_BUCKET"
"""The environment variable naming the config bucket, as in Sleeper: every component loads the instance properties
from ``s3://$CONFIG_BUCKET/instance.properties`` and finds everything else through them."""
HANDLER_ENV = "SLEEPER_HANDLER"
"""The environment variable naming the handler (``module:function``) a Lambda function runs, from the registry."""
INSTANCE_ID_ENV = "SLEEPER_INSTANCE_ID"
SERVICE_NAME_ENV = "POWERTOOLS_SERVICE_NAME"
"""The environment variable naming a function's service on its log lines (Powertools' convention): the name of the
registry entry it runs, its role in Sleeper (``compaction_job_creation``, ``query``, ...)."""
METRICS_NAMESPACE_ENV = "POWERTOOLS_METRICS_NAMESPACE"
"""The environment variable naming the CloudWatch namespace of a function's metrics (Powertools' convention): the
instance's ``sleeper.cloudwatch.table.metrics.namespace``, where every handler publishes its EMF lines."""
TRACE_DISABLED_ENV = "POWERTOOLS_TRACE_DISABLED"
"""The environment variable turning Powertools' tracer off: ``true`` unless ``sleeper.tracing.enabled``."""


def secure_bucket(
    scope: Construct,
    construct_id: str,
    ctx: DeployContext,
    *,
    name: str,
    access_logs: s3.IBucket | None,
    removal_policy: cdk.RemovalPolicy | None = None,
    expiry_days: int | None = None,
    encryption_key: kms.IKey | None = None,
) -> s3.Bucket:
    """A private bucket: public access blocked, S3-managed encryption (or a KMS key's), TLS enforced, server access
    logged.

    Args:
        scope: The parent construct.
        construct_id: The construct id.
        ctx: The deployment.
        name: The bucket name.
        access_logs: The bucket receiving server access logs (None only for that bucket itself).
        removal_policy: What happens on destroy (default: the instance's retain setting); destroyed buckets are
            emptied first.
        expiry_days: If set, objects expire after this many days.
        encryption_key: If set, objects are encrypted with this KMS key (with an S3 bucket key), not S3's own.
    """
    policy = removal_policy or ctx.removal_policy
    bucket = s3.Bucket(
        scope,
        construct_id,
        bucket_name=name,
        block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
        encryption=s3.BucketEncryption.S3_MANAGED if encryption_key is None else s3.BucketEncryption.KMS,
        encryption_key=encryption_key,
        bucket_key_enabled=True if encryption_key is not None else None,
        enforce_ssl=True,
        versioned=False,
        object_ownership=s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
        server_access_logs_bucket=access_logs,
        server_access_logs_prefix=f"{name.split('-')[-2]}/" if access_logs is not None else None,
        removal_policy=policy,
        auto_delete_objects=policy == cdk.RemovalPolicy.DESTROY,
        lifecycle_rules=[s3.LifecycleRule(expiration=cdk.Duration.days(expiry_days))] if expiry_days else None,
    )
    grants.register_bucket(bucket, name)
    return bucket


@dataclass(slots=True)
class SleeperCore:
    """The resources every optional stack builds on, created by the core stacks of the instance.

    Attributes:
        ctx: The deployment.
        images: Where Lambda and container images come from.
        cdk_properties: Properties set by the deployment (resource names, queue URLs), written with the user's into
            ``instance.properties`` in the config bucket.
    """

    ctx: DeployContext
    images: Images
    cdk_properties: dict[str, str] = field(default_factory=dict)
    config_bucket: s3.IBucket | None = None
    data_bucket: s3.IBucket | None = None
    access_logs_bucket: s3.IBucket | None = None
    alarm_topic: sns.ITopic | None = None
    files_log: dynamodb.ITable | None = None
    partitions_log: dynamodb.ITable | None = None
    latest_snapshots: dynamodb.ITable | None = None
    all_snapshots: dynamodb.ITable | None = None
    index_by_name: dynamodb.ITable | None = None
    index_by_id: dynamodb.ITable | None = None
    index_by_online: dynamodb.ITable | None = None
    ingest_tracker_tables: tuple[dynamodb.ITable, ...] = ()
    compaction_tracker_tables: tuple[dynamodb.ITable, ...] = ()
    ingest_batcher_store: dynamodb.ITable | None = None
    committer_queue: sqs.IQueue | None = None
    query_results_bucket: s3.IBucket | None = None
    query_tracker: dynamodb.ITable | None = None
    vpc: ec2.IVpc | None = None
    subnets: ec2.SubnetSelection | None = None
    queues: dict[str, sqs.IQueue] = field(default_factory=dict)
    rules: list[events.Rule] = field(default_factory=list)
    functions: dict[str, lambda_.IFunction] = field(default_factory=dict)

    @property
    def lambdas(self) -> LambdaFactory:
        """Creates Lambda functions for this instance."""
        return LambdaFactory(self)

    def set(self, prop: PropertyDefinition | str, value: str) -> None:
        """Records a deployment-set property for ``instance.properties``."""
        self.cdk_properties[prop if isinstance(prop, str) else prop.name] = value

    # Typed accessors for resources that must exist once the core stacks are built.
    @property
    def config(self) -> s3.IBucket:
        """The config bucket."""
        return _need(self.config_bucket, "config bucket")

    @property
    def data(self) -> s3.IBucket:
        """The table data bucket."""
        return _need(self.data_bucket, "data bucket")

    @property
    def committer(self) -> sqs.IQueue:
        """The state store committer queue."""
        return _need(self.committer_queue, "state store committer queue")

    @property
    def dynamodb_state_store(self) -> bool:
        """Whether the DynamoDB transaction log and snapshot tables are deployed: not when the instance's default
        state store and every table of the configuration are ``S3TransactionLogStateStore`` (beyond Sleeper)."""
        return deploys_dynamodb_state_store(self.ctx.properties, self.ctx.tables)

    @property
    def state_store_tables(self) -> tuple[dynamodb.ITable, ...]:
        """The transaction log and snapshot tables (files log, partitions log, latest and all snapshots); none when
        they are not deployed (:attr:`dynamodb_state_store`)."""
        if not self.dynamodb_state_store:
            return ()
        return tuple(
            _need(t, "state store table")
            for t in (self.files_log, self.partitions_log, self.latest_snapshots, self.all_snapshots)
        )

    @property
    def log_tables(self) -> tuple[dynamodb.ITable, ...]:
        """The files and partitions transaction log tables; none when they are not deployed."""
        return self.state_store_tables[:2]

    @property
    def snapshot_tables(self) -> tuple[dynamodb.ITable, ...]:
        """The latest and all snapshots tables; none when they are not deployed."""
        return self.state_store_tables[2:]

    @property
    def table_index_tables(self) -> tuple[dynamodb.ITable, ...]:
        """The table index tables."""
        return tuple(_need(t, "table index") for t in (self.index_by_name, self.index_by_id, self.index_by_online))

    # --- grants used by many components ---------------------------------------------------------------------------

    def grant_table_state_read(self, grantee: iam.IGrantable) -> None:
        """Read the instance, its tables and their state (properties, index, logs, snapshots, large bodies), and the
        tombstones of deleted tables an ``S3TransactionLogStateStore`` append checks after it lands."""
        grants.config_read(grantee, self.config)
        grants.table_read(grantee, *self.table_index_tables, *self.state_store_tables)
        grants.bucket_read(grantee, self.data, [grants.STATESTORE_PREFIX, DELETED_TABLES_KEYS])
        self.grant_user_code_read(grantee)

    def grant_user_code_read(self, grantee: iam.IGrantable) -> None:
        """Read the iterator wheels ``sleeper.userjars`` lists in ``sleeper.jars.bucket`` (each key named, nothing
        else of the bucket), which every process that may run a table's iterator installs when it starts; nothing
        when no wheel is listed. An unset ``sleeper.jars.bucket`` is set to the artefacts bucket ``sleeper
        artefacts`` fills (``sleeper-<artefacts deployment id>-jars``), as Sleeper's deployment sets it."""
        keys = user_wheel_keys(self.ctx.properties)
        bucket = self.ctx.get(common.JARS_BUCKET)
        if keys and not bucket:
            bucket = jars_bucket_name(self.ctx.properties)
            self.set(common.JARS_BUCKET, bucket)
        if bucket and keys:
            grants.allow(grantee, grants.S3_READ, [f"arn:{cdk.Aws.PARTITION}:s3:::{bucket}/{key}" for key in keys])

    def grant_table_state_commit(self, grantee: iam.IGrantable) -> None:
        """Read table state, append to the transaction logs synchronously and send asynchronous commits."""
        self.grant_table_state_read(grantee)
        if self.log_tables:  # none on an instance whose tables all keep their logs in S3
            grants.table_read_write(grantee, *self.log_tables)
        grants.bucket_write(grantee, self.data, [grants.STATESTORE_PREFIX])
        grants.queue_send(grantee, self.committer)


DELETED_TABLES_KEYS = "_deleted_tables/*"
"""The tombstones of deleted tables of ``S3TransactionLogStateStore`` (``sleeper.statestore.object_log``'s
``DELETED_TABLES_PREFIX``; stacks import only ``sleeper.core``)."""

_T = TypeVar("_T")


def _need(value: _T | None, what: str) -> _T:
    if value is None:
        raise RuntimeError(f"the {what} is not created yet: build the core stacks first")
    return value


class SleeperQueue(Construct):
    """An encrypted, TLS-only queue with a dead-letter queue and an alarm on dead letters.

    The names follow Sleeper: ``sleeper-<id>-<logical name>`` and its DLQ (``...DLQ``). The URL and ARN of each are
    recorded in the deployment-set properties when property definitions are given.
    """

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        core: SleeperCore,
        *,
        logical_name: str,
        visibility_timeout_seconds: int = 900,
        max_receive_count: int = 3,
        url_property: PropertyDefinition | str | None = None,
        arn_property: PropertyDefinition | str | None = None,
        dlq_url_property: PropertyDefinition | str | None = None,
        dlq_arn_property: PropertyDefinition | str | None = None,
        alarm_description: str = "",
    ) -> None:
        super().__init__(scope, construct_id)
        ctx = core.ctx
        fifo = logical_name.endswith(".fifo")
        self.dead_letter_queue = sqs.Queue(
            self,
            "DeadLetters",
            queue_name=naming.dead_letter_queue_name(ctx.instance_id, logical_name),
            fifo=fifo or None,
            encryption=sqs.QueueEncryption.SQS_MANAGED,
            enforce_ssl=True,
            retention_period=cdk.Duration.days(14),
        )
        self.queue = sqs.Queue(
            self,
            "Queue",
            queue_name=ctx.queue_name(logical_name),
            fifo=fifo or None,
            encryption=sqs.QueueEncryption.SQS_MANAGED,
            enforce_ssl=True,
            visibility_timeout=cdk.Duration.seconds(visibility_timeout_seconds),
            dead_letter_queue=sqs.DeadLetterQueue(max_receive_count=max_receive_count, queue=self.dead_letter_queue),
        )
        self.alarm = cloudwatch.Alarm(
            self,
            "DeadLettersAlarm",
            alarm_description=alarm_description or f"Messages arrived on the dead-letter queue of {logical_name}",
            metric=self.dead_letter_queue.metric_approximate_number_of_messages_visible(
                period=cdk.Duration.minutes(1), statistic="Maximum"
            ),
            threshold=0,
            comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
            evaluation_periods=1,
            treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
        )
        if core.alarm_topic is not None:
            self.alarm.add_alarm_action(cw_actions.SnsAction(core.alarm_topic))
        for prop, value in (
            (url_property, self.queue.queue_url),
            (arn_property, self.queue.queue_arn),
            (dlq_url_property, self.dead_letter_queue.queue_url),
            (dlq_arn_property, self.dead_letter_queue.queue_arn),
        ):
            if prop is not None:
                core.set(prop, value)
        core.queues[logical_name] = self.queue


class LambdaFactory:
    """Creates Lambda functions from the one Lambda image, each running the handler the registry names for it.

    Every function gets its own role (logs of its own log group only; callers add what it needs), its own log group
    with the instance's retention, the config bucket in ``CONFIG_BUCKET`` and the handler in ``SLEEPER_HANDLER``; the
    image command is overridden with the handler so the Lambda runtime interface client calls it directly.

    Powertools' variables name its service (``POWERTOOLS_SERVICE_NAME``: the registry entry's name) and its metrics
    namespace (``POWERTOOLS_METRICS_NAMESPACE``); ``sleeper.tracing.enabled`` decides whether it is traced with
    X-Ray (active tracing and ``POWERTOOLS_TRACE_DISABLED=false``) or not (no tracing configuration, which Lambda
    runs as pass-through, and ``POWERTOOLS_TRACE_DISABLED=true``). Functions run on the CPU architecture of
    ``sleeper.lambda.cpu.architecture`` (ARM64 by default), which the Lambda image is built for.
    """

    def __init__(self, core: SleeperCore) -> None:
        self._core = core

    def function(
        self,
        scope: Construct,
        construct_id: str,
        *,
        handler: str,
        name_suffix: str,
        description: str,
        memory_mb: int | None = None,
        timeout_seconds: int | None = None,
        reserved_concurrency: int | None = None,
        environment: Mapping[str, str] | None = None,
    ) -> lambda_.Function:
        """A function running a registered handler.

        Args:
            scope: The parent construct.
            construct_id: The construct id.
            handler: The handler's name in the registry.
            name_suffix: The function name is ``sleeper-<cid>-<suffix>``.
            description: The function description.
            memory_mb: Memory; by default the instance property the registry names for it, else the registry's
                default.
            timeout_seconds: Timeout; by default the instance property the registry names for it, else the
                registry's default.
            reserved_concurrency: Reserved concurrency, if any.
            environment: Extra environment variables.
        """
        ctx = self._core.ctx
        spec: HandlerSpec = operations.handler(handler)
        name = ctx.function_name(name_suffix)
        log_group = logs.LogGroup(
            scope,
            f"{construct_id}Logs",
            log_group_name=naming.log_group_name(name),
            retention=retention(ctx),
            removal_policy=ctx.log_removal_policy,
        )
        role = iam.Role(
            scope,
            f"{construct_id}Role",
            assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"),
            description=f"Runs {name}",
        )
        role.add_to_principal_policy(
            grants.statement(["logs:CreateLogStream", "logs:PutLogEvents"], [log_group.log_group_arn])
        )
        env = {
            CONFIG_BUCKET_ENV: self._core.config.bucket_name,
            INSTANCE_ID_ENV: ctx.instance_id,
            HANDLER_ENV: spec.handler,
            SERVICE_NAME_ENV: spec.name,
            METRICS_NAMESPACE_ENV: ctx.get(common.METRICS_NAMESPACE) or "Sleeper",
            TRACE_DISABLED_ENV: "false" if ctx.tracing else "true",
        }
        env.update(environment or {})
        function = lambda_.DockerImageFunction(
            scope,
            construct_id,
            function_name=name,
            description=description,
            code=self._core.images.lambda_code(scope, spec.handler),
            memory_size=memory_mb or _sized(ctx, spec.memory_property, spec.memory_mb),
            timeout=cdk.Duration.seconds(timeout_seconds or _sized(ctx, spec.timeout_property, spec.timeout_seconds)),
            reserved_concurrent_executions=reserved_concurrency,
            environment=env,
            role=role,
            log_group=log_group,
            tracing=lambda_.Tracing.ACTIVE if ctx.tracing else lambda_.Tracing.DISABLED,
            architecture=lambda_.Architecture.ARM_64 if ctx.lambda_arm64 else lambda_.Architecture.X86_64,
        )
        if ctx.tracing:
            nag.acknowledge(role, "IAM5[Resource::*]", nag.XRAY_TRACING)
        self._core.functions[handler] = function
        return function


def _sized(ctx: DeployContext, prop: str | None, default: int) -> int:
    """A function's memory or timeout: the instance property the registry names for it, else the default."""
    return ctx.get_int(prop) if prop is not None and ctx.get(prop) else default


def retention(ctx: DeployContext) -> logs.RetentionDays:
    days = ctx.get_int(common.LOG_RETENTION_IN_DAYS)
    if days < 0:
        return logs.RetentionDays.INFINITE
    return _RETENTION.get(days, logs.RetentionDays.ONE_MONTH)


_R = logs.RetentionDays
_RETENTION = {
    1: _R.ONE_DAY, 3: _R.THREE_DAYS, 5: _R.FIVE_DAYS, 7: _R.ONE_WEEK, 14: _R.TWO_WEEKS, 30: _R.ONE_MONTH,
    60: _R.TWO_MONTHS, 90: _R.THREE_MONTHS, 120: _R.FOUR_MONTHS, 150: _R.FIVE_MONTHS, 180: _R.SIX_MONTHS,
    365: _R.ONE_YEAR, 400: _R.THIRTEEN_MONTHS, 545: _R.EIGHTEEN_MONTHS, 731: _R.TWO_YEARS, 1827: _R.FIVE_YEARS,
    3653: _R.TEN_YEARS,
}  # fmt: skip


def sqs_trigger(
    function: lambda_.IFunction, queue: sqs.IQueue, *, batch_size: int = 1, max_concurrency: int | None = None
) -> None:
    """Feeds a function from a queue, reporting per-message failures (failed messages return to the queue)."""
    function.add_event_source(
        sources.SqsEventSource(
            queue, batch_size=batch_size, max_concurrency=max_concurrency, report_batch_item_failures=True
        )
    )


def schedule_rule(
    scope: Construct,
    construct_id: str,
    core: SleeperCore,
    *,
    rule: str,
    period: cdk.Duration,
    target: lambda_.IFunction,
    description: str,
    rule_property: PropertyDefinition | None = None,
) -> events.Rule:
    """A scheduled EventBridge rule ``<id>-<rule>`` invoking a function."""
    name = core.ctx.rule_name(rule)
    created = events.Rule(
        scope,
        construct_id,
        rule_name=name,
        description=description,
        schedule=events.Schedule.rate(period),
        targets=[targets.LambdaFunction(target)],
    )
    if rule_property is not None:
        core.set(rule_property, name)
    core.rules.append(created)
    return created


def registered_queue(
    scope: Construct,
    construct_id: str,
    core: SleeperCore,
    logical_name: str,
    *,
    visibility_timeout_seconds: int = 900,
    max_receive_count: int | None = None,
    alarm_description: str = "",
) -> SleeperQueue:
    """A queue of the registry (:func:`sleeper.core.operations.queue`): its name, its receive limit (unless given)
    and the properties recording its URL and ARN and its dead-letter queue's
    (:func:`sleeper.core.operation_wiring.queue_properties`) from its entry.

    Raises:
        KeyError: If the registry has no queue of that name.
    """
    spec = operations.queue(logical_name)
    props = operation_wiring.queue_properties(spec) if spec.on_aws else None
    return SleeperQueue(
        scope,
        construct_id,
        core,
        logical_name=spec.name,
        visibility_timeout_seconds=visibility_timeout_seconds,
        max_receive_count=spec.max_receive_count if max_receive_count is None else max_receive_count,
        url_property=None if props is None else props.url,
        arn_property=None if props is None else props.arn,
        dlq_url_property=None if props is None else props.dlq_url,
        dlq_arn_property=None if props is None else props.dlq_arn,
        alarm_description=alarm_description,
    )


@dataclass(frozen=True, slots=True)
class QueueOperation:
    """A queue-driven operation as deployed: its queue and the function its messages are delivered to."""

    queue: SleeperQueue
    function: lambda_.Function


def queue_operation(
    scope: Construct,
    core: SleeperCore,
    handler: str,
    *,
    prefix: str,
    name_suffix: str,
    description: str | None = None,
    memory_mb: int | None = None,
    timeout_seconds: int | None = None,
    batch_size: int | None = None,
    max_concurrency: int | None = None,
    reserved_concurrency: int | None = None,
    alarm_description: str = "",
) -> QueueOperation:
    """A registry entry fed by one queue, deployed: its queue (``<prefix>Queue``, :func:`registered_queue`, visible
    for six times the function's timeout) and its function (``<prefix>Handler``, running the registry's handler)
    fed by it in batches of the entry's size. The function may read the config bucket; callers add what else it
    needs.

    Raises:
        KeyError: If the registry has no such handler.
        ValueError: If the handler is not fed by exactly one queue of the registry.
    """
    spec = operations.handler(handler)
    queue_spec = operation_wiring.queue_fed(spec)
    function = core.lambdas.function(
        scope,
        f"{prefix}Handler",
        handler=handler,
        name_suffix=name_suffix,
        description=description or spec.description,
        memory_mb=memory_mb,
        timeout_seconds=timeout_seconds,
        reserved_concurrency=reserved_concurrency,
    )
    timeout = function.timeout.to_seconds() if function.timeout is not None else spec.timeout_seconds
    queue = registered_queue(
        scope,
        f"{prefix}Queue",
        core,
        queue_spec.name,
        visibility_timeout_seconds=max(int(timeout) * 6, 30),
        alarm_description=alarm_description or f"Messages could not be processed: {description or spec.description}",
    )
    grants.config_read(function, core.config)
    sqs_trigger(
        function,
        queue.queue,
        batch_size=spec.trigger.batch_size if batch_size is None else batch_size,
        max_concurrency=max_concurrency,
    )
    return QueueOperation(queue=queue, function=function)


@dataclass(frozen=True, slots=True)
class PerTableSchedule:
    """A scheduled trigger sending one message per online table to a FIFO queue that feeds a handler."""

    queue: SleeperQueue
    trigger: lambda_.Function
    handler: lambda_.Function
    rule: events.Rule


def per_table_schedule(
    scope: Construct,
    core: SleeperCore,
    *,
    prefix: str,
    trigger_handler: str,
    trigger_suffix: str,
    handler: str,
    handler_suffix: str,
    description: str,
    rule_property: PropertyDefinition | None,
    period: cdk.Duration | None = None,
    memory_mb: int | None = None,
    timeout_seconds: int | None = None,
    batch_size: int = 1,
    max_concurrency: int | None = None,
    reserved_concurrency: int | None = None,
    trigger_property: PropertyDefinition | None = None,
    handler_property: PropertyDefinition | None = None,
) -> PerTableSchedule:
    """Rule -> trigger Lambda -> per-table FIFO queue (message group = table id) -> handler Lambda, from the
    trigger's registry entry: the queue it ``sends_to`` (:func:`registered_queue`), its rule and, unless given, its
    period (its period property times its unit, or its fixed period).

    The trigger reads the online tables from the table index and sends to the queue; the handler gets the table's
    state; both get what they need here and callers add the handler's own permissions.

    Raises:
        ValueError: If the trigger's entry names no queue to send to or no rule.
    """
    ctx = core.ctx
    trigger_spec = operations.handler(trigger_handler)
    if trigger_spec.sends_to is None or trigger_spec.trigger.rule is None:
        raise ValueError(f"handler {trigger_handler!r} is not a per-table trigger: give it sends_to and a rule")
    if period is None:
        period = cdk.Duration.seconds(_period_seconds(ctx, trigger_spec))
    handler_timeout = timeout_seconds or _sized(
        ctx, operations.handler(handler).timeout_property, operations.handler(handler).timeout_seconds
    )
    queue = registered_queue(
        scope,
        f"{prefix}Queue",
        core,
        trigger_spec.sends_to,
        visibility_timeout_seconds=max(handler_timeout * 6, 30),
        alarm_description=f"Tables could not be processed: {description}",
    )
    trigger = core.lambdas.function(
        scope,
        f"{prefix}Trigger",
        handler=trigger_handler,
        name_suffix=trigger_suffix,
        description=f"Sends one message per online table to start: {description}",
        memory_mb=ctx.get_int(common.TABLE_BATCHING_LAMBDAS_MEMORY_IN_MB),
        timeout_seconds=ctx.get_int(common.TABLE_BATCHING_LAMBDAS_TIMEOUT_IN_SECONDS),
        reserved_concurrency=1,
    )
    grants.config_read(trigger, core.config)
    grants.table_read(trigger, *core.table_index_tables)
    grants.queue_send(trigger, queue.queue)
    function = core.lambdas.function(
        scope,
        f"{prefix}Handler",
        handler=handler,
        name_suffix=handler_suffix,
        description=description,
        memory_mb=memory_mb,
        timeout_seconds=handler_timeout,
        reserved_concurrency=reserved_concurrency,
    )
    sqs_trigger(function, queue.queue, batch_size=batch_size, max_concurrency=max_concurrency)
    created_rule = schedule_rule(
        scope,
        f"{prefix}Rule",
        core,
        rule=trigger_spec.trigger.rule,
        period=period,
        target=trigger,
        description=f"Triggers: {description}",
        rule_property=rule_property,
    )
    if trigger_property is not None:
        core.set(trigger_property, trigger.function_name)
    if handler_property is not None:
        core.set(handler_property, function.function_name)
    return PerTableSchedule(queue=queue, trigger=trigger, handler=function, rule=created_rule)


def _period_seconds(ctx: DeployContext, spec: HandlerSpec) -> int:
    """The period of a scheduled handler: its period property times its unit, else its fixed period."""
    trigger = spec.trigger
    if trigger.period_property is not None:
        return ctx.get_int(trigger.period_property) * trigger.period_unit_seconds
    if trigger.fixed_period_seconds is None:
        raise ValueError(f"handler {spec.name!r} has neither a period property nor a fixed period")
    return trigger.fixed_period_seconds
