"""Managed policies for people and services using the instance: ingest, query, direct query and admin.

Attach them to your own roles or users (their ARNs are stack outputs). Each grants only what its use needs, on the
resources of this instance that are deployed.

A table's filters, aggregations and iterators (a security filter among them) are applied by whoever reads its data
files, so a principal that may read the files directly sees every stored row. The query policy therefore reads no
data file: its queries run in the instance's functions (the query queue, the WebSocket API, Athena), which apply the
table's rules. Only the direct query policy (queries run in the user's own process, ``sleeper query`` and
``Table.scan`` against the deployed instance) and the admin policy (table deletion and reinitialisation; an admin may
change any table's rules anyway) read data files: attach them only to principals cleared to see every row.
"""

from __future__ import annotations

import aws_cdk as cdk
from aws_cdk import aws_iam as iam
from constructs import Construct

from sleeper.cdk import grants
from sleeper.cdk.common import SleeperCore
from sleeper.core import operations

ATHENA_HANDLERS = (operations.ATHENA_SIMPLE, operations.ATHENA_ITERATOR_APPLYING)

ATHENA_SERVICE = "athena.amazonaws.com"
CALLED_VIA_ATHENA = {"ForAnyValue:StringEquals": {"aws:CalledVia": [ATHENA_SERVICE]}}
"""The condition on a user's ``lambda:InvokeFunction`` of the Athena connectors: only Athena, running a query for the
user, may make the call (Athena invokes a LAMBDA catalog's function with the caller's credentials and names itself in
``aws:CalledVia``); a direct invocation, whose request body (the identity in it among the rest) the caller writes, is
denied."""

INGEST_QUEUES = (
    operations.INGEST_JOB_Q,
    operations.INGEST_BATCHER_SUBMIT_Q,
    operations.BULK_IMPORT_EMR_SERVERLESS_Q,
    operations.BULK_IMPORT_EMR_Q,
    operations.BULK_IMPORT_PERSISTENT_EMR_Q,
    operations.BULK_IMPORT_EKS_Q,
)


class ManagedPoliciesStack(cdk.NestedStack):
    """``sleeper-<cid>-IngestPolicy``, ``-QueryPolicy``, ``-DirectQueryPolicy`` and ``-AdminPolicy``."""

    def __init__(self, scope: Construct, construct_id: str, core: SleeperCore) -> None:
        super().__init__(scope, construct_id, description="Sleeper managed policies")
        ctx = core.ctx
        self.ingest = iam.ManagedPolicy(
            self, "IngestPolicy", managed_policy_name=ctx.policy_name("IngestPolicy"),
            description="Submit ingest, batcher and bulk import jobs and upload their files",
        )  # fmt: skip
        grants.config_read(self.ingest, core.config)
        grants.table_read(self.ingest, *core.table_index_tables)
        grants.bucket_read_write(self.ingest, core.data, [grants.FOR_INGEST_PREFIX])
        grants.table_read(self.ingest, *core.ingest_tracker_tables)
        if core.ingest_batcher_store is not None:
            # Who submits files to the batcher may read what it holds (Sleeper grants its store's read to the policy)
            grants.table_read(self.ingest, core.ingest_batcher_store)
        ingest_queues = [core.queues[q] for q in INGEST_QUEUES if q in core.queues]
        if ingest_queues:
            grants.queue_send(self.ingest, *ingest_queues)

        self.query = iam.ManagedPolicy(
            self, "QueryPolicy", managed_policy_name=ctx.policy_name("QueryPolicy"),
            description="Submit queries and read their status and results; query through Athena; no data file reads",
        )  # fmt: skip
        core.grant_table_state_read(self.query)
        if operations.QUERY_Q in core.queues:
            grants.queue_send(self.query, core.queues[operations.QUERY_Q])
        if operations.QUERY_RESULTS_Q in core.queues:
            # Results a query asks for on SQS are collected by the user's client (sleeper.query.results_reader)
            grants.queue_consume(self.query, core.queues[operations.QUERY_RESULTS_Q])
        if core.query_results_bucket is not None and core.query_tracker is not None:
            grants.bucket_read(self.query, core.query_results_bucket)
            grants.table_read(self.query, core.query_tracker)
        connectors = [core.functions[h] for h in ATHENA_HANDLERS if h in core.functions]
        if connectors:
            # Athena calls a LAMBDA catalog's function with the credentials of the user running the query; the
            # condition keeps the user from invoking it directly with a request of their own
            grants.allow(
                self.query,
                ["lambda:InvokeFunction"],
                [f.function_arn for f in connectors],
                conditions=CALLED_VIA_ATHENA,
            )

        self.direct_query = iam.ManagedPolicy(
            self, "DirectQueryPolicy", managed_policy_name=ctx.policy_name("DirectQueryPolicy"),
            description="Run queries in your own process from the data files: sees every stored row of every table",
        )  # fmt: skip
        core.grant_table_state_read(self.direct_query)
        grants.bucket_read(self.direct_query, core.data, [grants.DATA_PREFIX])

        self.admin = iam.ManagedPolicy(
            self, "AdminPolicy", managed_policy_name=ctx.policy_name("AdminPolicy"),
            description="Administer the instance: properties, tables, reports, dead letters, pause and resume",
        )  # fmt: skip
        grants.bucket_read_write(self.admin, core.config)
        grants.bucket_delete(self.admin, core.config, grants.CONFIG_PREFIXES)
        grants.table_read_write(self.admin, *core.table_index_tables, *core.state_store_tables)
        grants.table_read(self.admin, *core.ingest_tracker_tables, *core.compaction_tracker_tables)
        grants.bucket_read_write(self.admin, core.data)
        grants.bucket_delete(self.admin, core.data, grants.TABLE_DELETE_PREFIXES)
        queues = list(core.queues.values())
        grants.queue_send(self.admin, *queues)
        grants.allow(
            self.admin,
            ["sqs:ReceiveMessage", "sqs:DeleteMessage", "sqs:ChangeMessageVisibility", "sqs:PurgeQueue"],
            [q.queue_arn for q in queues],
        )
        grants.allow(
            self.admin,
            ["events:EnableRule", "events:DisableRule", "events:DescribeRule"],
            [rule.rule_arn for rule in core.rules],
        )
        # Editing a table's properties so that it gains filters, aggregations or an iterator drops its Iceberg view
        # first (sleeper.iceberg.withdrawal); views are named by a table property, so any table in the catalog.
        glue = f"arn:{cdk.Aws.PARTITION}:glue:{cdk.Aws.REGION}:{cdk.Aws.ACCOUNT_ID}"
        grants.allow(
            self.admin,
            ["glue:GetTable", "glue:DeleteTable"],
            [f"{glue}:catalog", f"{glue}:database/*", f"{glue}:table/*/*"],
        )
