"""G8 log hygiene (docs/reliability.md): a run seeded with sentinel secrets leaves none of them in INFO logs.

The instance is built from an environment holding sentinel AWS credentials (moto accepts any), then ingest jobs, a
query, a commit request and bad messages go through the Lambda handlers and the ingest task: a good query, a query
and an ingest job carrying a credential-like field (which must be refused), and malformed JSON holding one. Every log
record at INFO or above, formatted with its traceback, and everything printed, must hold no sentinel. (botocore logs
its request signature at DEBUG, which Lambda and the tasks do not enable.)
"""

from __future__ import annotations

import json
import logging
import uuid
from collections.abc import Iterator

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from sleeper.core.operations import INGEST_JOB_Q, LEAF_PARTITION_QUERY_Q, QUERY_Q
from sleeper.core.schema import Field, PrimitiveType, Schema
from sleeper.emulator.provision import provision_instance
from sleeper.lambdas import sqs
from sleeper.lambdas._common import use_instance
from sleeper.runtime.aws.containers.ingest import run_task
from sleeper.runtime.aws.instance import AwsInstance
from tests.contract.aws_backends import REGION, aws_settings, moto_endpoint, new_instance_id
from tests.integration.aws_runtime.conftest import QUEUES, drain_event, sqs_event
from tests.reliability_report import Reliability

pytestmark = [pytest.mark.integration, pytest.mark.aws]

ACCESS_KEY = "AKIASENTINELG8ACCESS"
SECRET_KEY = "sentinel+G8+secret/access/key+do-not-log"
SESSION_TOKEN = "sentinel-G8-session-token-do-not-log"
QUERY_SECRET = "sentinel-G8-query-password"
SENTINELS = (ACCESS_KEY, SECRET_KEY, SESSION_TOKEN, QUERY_SECRET)
SCHEMA = Schema.of(row_keys=[Field("key", PrimitiveType.LONG)], values=[Field("value", PrimitiveType.LONG)])


@pytest.fixture(scope="module")
def sentinel_instance() -> Iterator[AwsInstance]:
    """An instance the handlers find from an environment whose AWS credentials are sentinels."""
    config = provision_instance(aws_settings(), new_instance_id(), queues=QUEUES)
    with pytest.MonkeyPatch.context() as env:
        env.setenv("CONFIG_BUCKET", config.config_bucket)
        env.setenv("AWS_REGION", REGION)
        env.setenv("AWS_ENDPOINT_URL", moto_endpoint())
        env.setenv("AWS_ACCESS_KEY_ID", ACCESS_KEY)
        env.setenv("AWS_SECRET_ACCESS_KEY", SECRET_KEY)
        env.setenv("AWS_SESSION_TOKEN", SESSION_TOKEN)
        use_instance(None)
        instance = AwsInstance.from_environment()
        use_instance(instance)
        yield instance
        use_instance(None)


def _formatted(records: list[logging.LogRecord]) -> str:
    formatter = logging.Formatter("%(levelname)s %(name)s %(message)s")
    return "\n".join(formatter.format(r) for r in records if r.levelno >= logging.INFO)


def should_log_no_credential_at_info_or_above(
    sentinel_instance: AwsInstance,
    caplog: pytest.LogCaptureFixture,
    capsys: pytest.CaptureFixture[str],
    reliability: Reliability,
) -> None:
    instance = sentinel_instance
    caplog.set_level(logging.DEBUG)
    for noisy in ("botocore", "boto3", "urllib3", "s3transfer", "werkzeug"):
        logging.getLogger(noisy).setLevel(logging.INFO)  # their DEBUG signs requests; INFO is what is checked
    # Given a table with rows ingested by a job, and bad messages carrying a credential
    table = instance.create_table(
        f"g8-{uuid.uuid4().hex[:8]}", SCHEMA, properties={"sleeper.table.ingest.job.files.commit.async": "false"}
    )
    source = f"{instance.data_bucket}/for_ingest/{uuid.uuid4()}.parquet"
    pq.write_table(
        pa.table({"key": pa.array(range(20), pa.int64()), "value": pa.array(range(20), pa.int64())}),
        source,
        filesystem=instance.filesystem,
    )
    good_ingest = json.dumps({"id": str(uuid.uuid4()), "tableName": table.name, "files": [source]})
    secret_ingest = json.dumps(
        {"id": str(uuid.uuid4()), "tableName": table.name, "files": [source], "password": QUERY_SECRET}
    )
    malformed = '{"id": "broken", "password": "' + QUERY_SECRET + '", "files": ['
    for body in (good_ingest, secret_ingest, malformed):
        instance.queue(INGEST_JOB_Q).send(body)
    # When the ingest task runs them, and the query handlers answer a good query and two bad ones
    outcomes = run_task(instance, wait_seconds=0).outcomes
    region = {"key": {"min": 0, "minInclusive": True, "max": 10, "maxInclusive": False}}
    queries = [
        {"queryId": str(uuid.uuid4()), "tableName": table.name, "type": "Query", "regions": [region]},
        {
            "queryId": str(uuid.uuid4()),
            "tableName": table.name,
            "type": "Query",
            "regions": [region],
            "authToken": QUERY_SECRET,
        },
        {
            "queryId": str(uuid.uuid4()),
            "tableName": "no-such-table",
            "type": "Query",
            "regions": [region],
            "resultsPublisherConfig": {"password": QUERY_SECRET},
        },
    ]
    for q in queries:
        instance.queue(QUERY_Q).send(json.dumps(q))
    sqs.query(drain_event(instance, QUERY_Q))
    sqs.leaf_partition_query(drain_event(instance, LEAF_PARTITION_QUERY_Q))
    sqs.statestore_committer(sqs_event([("m1", '{"password": "' + QUERY_SECRET + '"', table.table_id)]))
    # Then the work ran, and no sentinel is in any INFO (or higher) log record or in anything printed
    assert len(outcomes) == 3
    logged = _formatted(caplog.records)
    printed = capsys.readouterr()
    assert logged, "nothing was logged: the check would prove nothing"
    found = {s: (s in logged, s in printed.out + printed.err) for s in SENTINELS}
    leaks = {s: where for s, where in found.items() if any(where)}
    reliability.record(
        "G8",
        case="sentinel credentials (environment, query and ingest messages) in INFO logs",
        records_checked=sum(1 for r in caplog.records if r.levelno >= logging.INFO),
        sentinels=len(SENTINELS),
        sentinels_logged=len(leaks),
        unhandled_exceptions=0,
    )
    assert leaks == {}, f"sentinels found in logs (logged, printed): {leaks}"
