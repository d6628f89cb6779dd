"""Queries: the query and leaf partition query queues and Lambda functions, the results bucket (objects
expire), the results queue, the query tracker table, and optionally a rule keeping the functions warm."""

from __future__ import annotations

from typing import ClassVar

import aws_cdk as cdk
from constructs import Construct

from sleeper.cdk import grants
from sleeper.cdk.common import SleeperCore, registered_queue, schedule_rule, secure_bucket, sqs_trigger
from sleeper.cdk.tables import S, table
from sleeper.core import naming, operations
from sleeper.core.deploy import CLAIMED_OPERATIONS
from sleeper.core.properties import instance_cdk as cdkp
from sleeper.core.properties import instance_query as qp


class QueryStack(cdk.NestedStack):
    """``sleeper-<id>-QueryQueue``, ``-LeafPartitionQueryQueue``, ``-QueryResultsQ``, the
    ``sleeper-<id>-query-tracking-table`` and ``sleeper-<cid>-query-results-<account>``."""

    OPERATIONS: ClassVar[tuple[str, ...]] = CLAIMED_OPERATIONS["Query"]
    """The queue-driven operations of the registry this stack deploys (its claim in the deployment plan)."""

    def __init__(self, scope: Construct, construct_id: str, core: SleeperCore, *, keep_warm: bool) -> None:
        super().__init__(scope, construct_id, description="Sleeper queries")
        ctx = core.ctx
        timeout = ctx.get_int(qp.QUERY_PROCESSOR_LAMBDA_TIMEOUT_IN_SECONDS)
        memory = ctx.get_int(qp.QUERY_PROCESSOR_LAMBDA_MEMORY_IN_MB)
        self.results_bucket = secure_bucket(
            self,
            "ResultsBucket",
            ctx,
            name=naming.query_results_bucket_name(ctx.instance_id, ctx.account),
            access_logs=core.access_logs_bucket,
            expiry_days=ctx.get_int(qp.QUERY_RESULTS_BUCKET_EXPIRY_IN_DAYS),
        )
        self.tracker = table(
            self,
            "Tracker",
            ctx,
            suffix=naming.QUERY_TRACKER,
            hash_key=("queryId", S),
            range_key=("subQueryId", S),
            time_to_live="expiryDate",
        )
        self.query_queue = registered_queue(
            self,
            operations.QUERY_Q,  # the construct id: the logical name, as the deployed template always had it
            core,
            operations.QUERY_Q,
            visibility_timeout_seconds=timeout,
            alarm_description="Queries failed",
        )
        self.leaf_queue = registered_queue(
            self,
            "LeafQueue",
            core,
            operations.LEAF_PARTITION_QUERY_Q,
            visibility_timeout_seconds=timeout,
            alarm_description="Sub-queries failed",
        )
        self.results_queue = registered_queue(
            self,
            "ResultsQueue",
            core,
            operations.QUERY_RESULTS_Q,
            visibility_timeout_seconds=ctx.get_int(qp.QUERY_RESULTS_QUEUE_VISIBILITY_TIMEOUT_IN_SECONDS),
            alarm_description="Query results were not consumed",
        ).queue
        core.query_results_bucket, core.query_tracker = self.results_bucket, self.tracker
        core.set(cdkp.QUERY_RESULTS_BUCKET, self.results_bucket.bucket_name)
        core.set(cdkp.QUERY_TRACKER_TABLE_NAME, self.tracker.table_name)

        self.query_function = core.lambdas.function(
            self,
            "QueryExecutor",
            handler=operations.QUERY,
            name_suffix="query-executor",
            description="Plans queries into sub-queries per leaf partition",
            memory_mb=memory,
            timeout_seconds=timeout,
        )
        self.leaf_function = core.lambdas.function(
            self,
            "LeafPartitionQueryExecutor",
            handler=operations.LEAF_PARTITION_QUERY,
            name_suffix="query-leaf-partition",
            description="Runs sub-queries over the files of one leaf partition",
            memory_mb=memory,
            timeout_seconds=timeout,
        )
        for function in (self.query_function, self.leaf_function):
            core.grant_table_state_read(function)
            grants.table_read_write(function, self.tracker)
            grants.bucket_write(function, self.results_bucket)
            grants.queue_send(function, self.results_queue)
        grants.queue_send(self.query_function, self.leaf_queue.queue)
        # A query sent again under an earlier query's id deletes that run's result files first
        # (sleeper.query.queued.handle_query_message), so a reader never takes them for this run's.
        grants.bucket_read(self.query_function, self.results_bucket, ["query-*"])
        grants.bucket_delete(self.query_function, self.results_bucket, ["query-*"])
        grants.bucket_read(self.leaf_function, core.data, [grants.DATA_PREFIX])
        sqs_trigger(self.query_function, self.query_queue.queue)
        sqs_trigger(self.leaf_function, self.leaf_queue.queue)
        if keep_warm:
            self.warm_function = core.lambdas.function(
                self,
                "WarmQueries",
                handler=operations.QUERY_WARM,
                name_suffix="query-keep-warm",
                description="Sends a query to each table so the query functions stay warm",
                timeout_seconds=60,
            )
            grants.config_read(self.warm_function, core.config)
            grants.table_read(self.warm_function, *core.table_index_tables)
            grants.queue_send(self.warm_function, self.query_queue.queue)
            schedule_rule(
                self,
                "WarmRule",
                core,
                rule=naming.QUERY_WARM_RULE,
                period=cdk.Duration.minutes(ctx.get_int(qp.QUERY_WARM_LAMBDA_EXECUTION_PERIOD_IN_MINUTES)),
                target=self.warm_function,
                description="Keeps the query functions warm",
                rule_property=cdkp.QUERY_WARM_LAMBDA_CLOUDWATCH_RULE,
            )
