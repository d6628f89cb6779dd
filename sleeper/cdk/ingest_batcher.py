"""The ingest batcher: a submit queue and store of pending files, and a job creator every minute that
sends batches to the ingest or bulk import queues."""

from __future__ import annotations

from typing import ClassVar

import aws_cdk as cdk
from constructs import Construct

from sleeper.cdk import grants
from sleeper.cdk.common import SleeperCore, registered_queue, schedule_rule, sqs_trigger
from sleeper.cdk.ingest import grant_ingest_sources
from sleeper.cdk.tables import S, table
from sleeper.core import naming, operations
from sleeper.core.deploy import CLAIMED_OPERATIONS
from sleeper.core.properties import instance_cdk as cdkp
from sleeper.core.properties import instance_ingest as ip

JOB_QUEUES = (operations.INGEST_JOB_Q, *operations.BULK_IMPORT_PLATFORM_QUEUES.values())
"""Every queue a batcher job may go to (``sleeper.table.ingest.batcher.ingest.queue``): standard ingest and each bulk
import platform's; the job creator may send to those of them deployed."""


class IngestBatcherStack(cdk.NestedStack):
    """``sleeper-<id>-IngestBatcherSubmitQ``, ``sleeper-<id>-ingest-batcher-store``, submitter and job creator.

    Build it after the ingest and bulk import stacks: the job creator may send to whichever of their queues exist.
    """

    OPERATIONS: ClassVar[tuple[str, ...]] = CLAIMED_OPERATIONS["IngestBatcher"]
    """The queue-driven operations of the registry this stack deploys (its claim in the deployment plan)."""

    def __init__(self, scope: Construct, construct_id: str, core: SleeperCore) -> None:
        super().__init__(scope, construct_id, description="Sleeper ingest batcher")
        ctx = core.ctx
        submit_timeout = ctx.get_int(ip.INGEST_BATCHER_SUBMITTER_TIMEOUT_IN_SECONDS)
        self.submit_queue = registered_queue(
            self,
            "SubmitQueue",
            core,
            operations.INGEST_BATCHER_SUBMIT_Q,
            visibility_timeout_seconds=max(submit_timeout * 6, 30),
            alarm_description="Files submitted to the ingest batcher were rejected",
        )
        self.store = table(
            self,
            "Store",
            ctx,
            suffix=naming.INGEST_BATCHER_STORE,
            hash_key=("JobId", S),
            range_key=("FilePath", S),
            time_to_live="ExpiryTime",
        )
        core.ingest_batcher_store = self.store  # the ingest policy reads it, as Sleeper's IngestByQueuePolicy does
        self.submitter = core.lambdas.function(
            self,
            "Submitter",
            handler=operations.INGEST_BATCHER_SUBMITTER,
            name_suffix="ingest-batcher-submit-files",
            description="Records files submitted to the ingest batcher",
            timeout_seconds=submit_timeout,
        )
        grants.config_read(self.submitter, core.config)
        grants.table_read(self.submitter, *core.table_index_tables)
        grants.table_read_write(self.submitter, self.store)
        grant_ingest_sources(self.submitter, core)
        sqs_trigger(self.submitter, self.submit_queue.queue)

        self.job_creator = core.lambdas.function(
            self,
            "JobCreator",
            handler=operations.INGEST_BATCHER_JOB_CREATION,
            name_suffix="ingest-batcher-create-jobs",
            description="Creates ingest jobs from batches of submitted files",
            reserved_concurrency=1,
        )
        grants.config_read(self.job_creator, core.config)
        grants.table_read(self.job_creator, *core.table_index_tables)
        grants.table_read_write(self.job_creator, self.store, *core.ingest_tracker_tables)
        targets = [core.queues[name] for name in JOB_QUEUES if name in core.queues]
        if targets:
            grants.queue_send(self.job_creator, *targets)
        schedule_rule(
            self,
            "JobCreationRule",
            core,
            rule=naming.INGEST_BATCHER_JOB_CREATION_RULE,
            period=cdk.Duration.minutes(ctx.get_int(ip.INGEST_BATCHER_JOB_CREATION_LAMBDA_PERIOD_IN_MINUTES)),
            target=self.job_creator,
            description="Creates jobs from files submitted to the ingest batcher",
            rule_property=cdkp.INGEST_BATCHER_JOB_CREATION_CLOUDWATCH_RULE,
        )
        core.set(cdkp.INGEST_BATCHER_SUBMIT_REQUEST_FUNCTION, self.submitter.function_name)
        core.set(cdkp.INGEST_BATCHER_JOB_CREATION_FUNCTION, self.job_creator.function_name)
