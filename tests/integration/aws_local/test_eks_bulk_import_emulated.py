"""Bulk import on EKS, run on the emulated instance: a job sent to ``BulkImportEKSQ`` is taken by the starter's
Lambda, which starts an execution of the EKS state machine in moto's Step Functions with the ``spark-submit`` the
Kubernetes job would run; the pump plays the state machine (:mod:`sleeper.emulator.eks`): that submission runs on
local Spark with the job's settings, the driver writes the rows and sends the commit to the state store committer,
and the execution is ended. A Kubernetes job that fails goes to the state machine's failure recorder."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from sleeper.api.table import Table
from sleeper.core import operations
from sleeper.core.schema import Field, PrimitiveType, Schema
from sleeper.emulator.eks import LOCAL_MASTER, EksJobError, local_submit_command
from sleeper.emulator.instance import EmulatedAwsInstance
from sleeper.emulator.pump import Pump

pytestmark = [pytest.mark.integration, pytest.mark.aws, pytest.mark.slow]

pytest.importorskip("pyspark")

SCHEMA = Schema(
    row_key_fields=(Field("key", PrimitiveType.LONG),),
    value_fields=(Field("value", PrimitiveType.STRING),),
)
ROWS = pa.table(
    {"key": pa.array([(k * 37) % 101 for k in range(101)], pa.int64()), "value": [f"v{k}" for k in range(101)]}
)
ONE_LEAF = {"sleeper.table.bulk.import.min.leaf.partitions": "1"}
"""No pre-split: the table's two leaves are enough (the default, 256, needs more rows than a quick test has)."""


def _pump(emulated: EmulatedAwsInstance, log_dir: Path) -> Pump:
    """The starter's Lambda, the state store committer, and the EKS image's job."""
    handlers = tuple(operations.handler(h) for h in (operations.BULK_IMPORT_STARTER, operations.STATESTORE_COMMITTER))
    containers = [operations.container(operations.BULK_IMPORT_EKS_IMAGE)]
    return emulated.pump(handlers=handlers, containers=containers, task_log_dir=log_dir)


def _send(emulated: EmulatedAwsInstance, table: Table[Any], source: str, spark_conf: dict[str, str]) -> str:
    job_id = str(uuid.uuid4())
    body = {"id": job_id, "tableName": table.name, "files": [source], "sparkConf": spark_conf}
    emulated.instance().queue(operations.BULK_IMPORT_EKS_Q).send(json.dumps(body))
    return job_id


def _executions(emulated: EmulatedAwsInstance) -> list[dict[str, Any]]:
    instance = emulated.instance()
    arn = instance.properties.get("sleeper.bulk.import.eks.statemachine.arn")
    client = instance.clients.stepfunctions
    return [
        client.describe_execution(executionArn=e["executionArn"])
        for e in client.list_executions(stateMachineArn=arn)["executions"]
    ]


def _table_with_source(emulated: EmulatedAwsInstance, prefix: str) -> tuple[Table[Any], str]:
    instance = emulated.instance()
    table = instance.create_table(f"{prefix}-{uuid.uuid4().hex[:8]}", SCHEMA, split_points=[50], properties=ONE_LEAF)
    source = f"{instance.data_bucket}/source/{uuid.uuid4()}.parquet"
    pq.write_table(ROWS, source, filesystem=instance.filesystem)
    return table, source


def should_run_a_bulk_import_job_sent_to_the_eks_queue_through_the_state_machine_on_local_spark(
    emulated: EmulatedAwsInstance, tmp_path: Path
) -> None:
    # Given a table of two leaves, a Parquet file in the data bucket, and a pump of the starter, the committer and the
    # EKS job
    table, source = _table_with_source(emulated, "eks")
    pump = _pump(emulated, tmp_path)
    # When a bulk import job is sent to the EKS queue, and the pump runs until everything is done
    job_id = _send(emulated, table, source, {})
    done = pump.run_until_idle(timeout_seconds=300)
    # Then the starter started one execution named after the table and job, whose input holds the cluster submission
    # of the job's driver; its Kubernetes job ran (exit code 0) and the execution was ended
    assert done.delivered.get(operations.BULK_IMPORT_STARTER) == 1 and done.failed == {}
    logs = "".join(p.read_text(errors="replace") for p in tmp_path.glob("*.log"))
    assert done.tasks_finished == [(f"EKS job of execution {table.table_id[: 80 - len(job_id) - 1]}-{job_id}", 0)], logs
    (execution,) = [e for e in _executions(emulated) if e["name"].endswith(job_id)]
    submitted = json.loads(execution["input"])
    assert submitted["args"][:3] == ["spark-submit", "--deploy-mode", "cluster"]
    assert submitted["args"][-5:] == [emulated.config.config_bucket, job_id, execution["stateMachineArn"],
                                      submitted["jobRunId"], "EKS"]  # fmt: skip
    assert execution["status"] == "ABORTED"  # moto ends an execution only by StopExecution
    # And the rows are in the table, in key order, as pyarrow reads them from the source file
    assert table.scan().to_arrow().to_pylist() == ROWS.sort_by("key").to_pylist()
    # And the tracker records the run the starter began validated, started and finished under the state machine
    status = emulated.instance().ingest_job_tracker.job(job_id)
    assert status is not None and status.status.name == "FINISHED"
    (run,) = status.runs
    assert run.job_run_id == submitted["jobRunId"] and run.task_id == execution["stateMachineArn"]


def should_record_the_run_failed_through_the_failure_recorder_when_spark_submit_fails_before_the_driver(
    emulated: EmulatedAwsInstance, tmp_path: Path
) -> None:
    # Given a table, a Parquet file, and a job whose Spark settings spark-submit refuses before it starts the driver
    # (a maximum heap in the driver's Java options)
    table, source = _table_with_source(emulated, "eksfail")
    pump = _pump(emulated, tmp_path)
    job_id = _send(emulated, table, source, {"spark.driver.extraJavaOptions": "-Xmx1g"})
    # When the pump runs until everything is done
    done = pump.run_until_idle(timeout_seconds=180)
    # Then the Kubernetes job failed, the failure recorder recorded the run failed with the state machine's error, and
    # nothing was written
    assert len(done.tasks_finished) == 1 and done.tasks_finished[0][1] != 0
    status = emulated.instance().ingest_job_tracker.job(job_id)
    assert status is not None and status.status.name == "FAILED"
    (run,) = status.runs
    assert any("Kubernetes job" in reason for reason in run.failure_reasons), run
    assert table.scan().to_arrow().num_rows == 0


def should_submit_locally_what_the_state_machine_would_submit_to_the_cluster(tmp_path: Path) -> None:
    # Given the spark-submit of an execution's input, as the EKS launcher builds it
    args = ["spark-submit", "--deploy-mode", "cluster", "--conf", "spark.master=k8s://https://x",
            "--conf", "spark.kubernetes.namespace=ns", "--conf", "spark.executor.memory=16g",
            "local:///opt/sleeper/bulk_import_driver.py", "config", "job", "task", "run", "EKS"]  # fmt: skip
    # When the emulator turns it into a local submission reading one bucket from a mirror
    command = local_submit_command(args, tmp_path / "d.py", spark_submit="spark-submit", s3_mirrors={"b": tmp_path})
    # Then the cluster settings are gone, the job's own kept, the s3a scheme overloaded, and the driver's arguments
    # follow the local driver script as given
    conf = [command[i + 1] for i, arg in enumerate(command) if arg == "--conf"]
    assert command[1:3] == ["--master", LOCAL_MASTER] and "--deploy-mode" not in command
    assert "spark.executor.memory=16g" in conf
    assert not [c for c in conf if c.startswith(("spark.master=", "spark.kubernetes."))]
    assert f"spark.hadoop.fs.viewfs.mounttable.b.linkFallback={tmp_path.as_uri()}" in conf
    assert command[-6:] == [str(tmp_path / "d.py"), "config", "job", "task", "run", "EKS"]
    with pytest.raises(EksJobError, match="not a spark-submit command"):
        local_submit_command(["python"], "d.py", spark_submit="spark-submit")
