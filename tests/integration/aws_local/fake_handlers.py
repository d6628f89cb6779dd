"""Stand-ins for handlers and container entry points, so the pump's deliveries can be seen without Sleeper's work."""

from __future__ import annotations

import json
import os
import sys
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import Any

EVENTS: list[Mapping[str, Any]] = []
"""Every event a stand-in handler was given, in order."""

OUT_ENV = "FAKE_TASK_OUT"
"""The directory a stand-in entry point writes what it was run with to."""


def sqs(event: Mapping[str, Any], context: object = None) -> dict[str, list[dict[str, str]]]:
    """Records the event; reports failed every message whose body starts with ``fail``."""
    EVENTS.append(event)
    failed = [r["messageId"] for r in event["Records"] if str(r["body"]).startswith("fail")]
    return {"batchItemFailures": [{"itemIdentifier": message_id} for message_id in failed]}


def scheduled(event: Mapping[str, Any], context: object = None) -> None:
    """Records the event."""
    EVENTS.append(event)


def entry_point() -> int:
    """Writes its arguments and the environment variables that locate the instance to ``$FAKE_TASK_OUT``."""
    keys = ("CONFIG_BUCKET", "SLEEPER_INSTANCE_ID", "AWS_ENDPOINT_URL", "AWS_REGION", "AWS_ACCESS_KEY_ID")
    record = {"argv": sys.argv[1:], "env": {k: os.environ.get(k) for k in keys}}
    (Path(os.environ[OUT_ENV]) / f"{uuid.uuid4().hex}.json").write_text(json.dumps(record))
    return 0


FAIL_STREAM_RECORD_AT: list[int] = []
"""Positions in the next stream batches of a record the stand-in stream handler reports failed (one per batch)."""


def stream(event: Mapping[str, Any], context: object = None) -> dict[str, list[dict[str, str]]]:
    """Records the event; reports failed the record at the next position in ``FAIL_STREAM_RECORD_AT``, if any."""
    EVENTS.append(event)
    records = event["Records"]
    if FAIL_STREAM_RECORD_AT and FAIL_STREAM_RECORD_AT[0] < len(records):
        sequence = str(records[FAIL_STREAM_RECORD_AT.pop(0)]["dynamodb"]["SequenceNumber"])
        return {"batchItemFailures": [{"itemIdentifier": sequence}]}
    return {"batchItemFailures": []}


SEEN_INSTANCES: list[dict[str, str | None]] = []
"""What the stand-in handler ``located`` saw of where the instance is, per invocation."""


def located(event: Mapping[str, Any], context: object = None) -> dict[str, list[dict[str, str]]]:
    """Records the instance the handlers' ``aws_instance()`` finds, and the environment it was found from."""
    from sleeper.lambdas._common import aws_instance

    config = aws_instance().config
    SEEN_INSTANCES.append(
        {
            "config_bucket": config.config_bucket,
            "endpoint": config.settings.endpoint_url,
            "CONFIG_BUCKET": os.environ.get("CONFIG_BUCKET"),
            "AWS_ENDPOINT_URL": os.environ.get("AWS_ENDPOINT_URL"),
        }
    )
    return {"batchItemFailures": []}
