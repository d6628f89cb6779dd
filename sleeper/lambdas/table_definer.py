"""The table definer: a CloudFormation custom resource (``Custom::SleeperTables``) creating the tables of a
deployed configuration and keeping them on redeploys (:mod:`sleeper.runtime.table_definer`).

CloudFormation invokes the function directly with the request and a pre-signed URL, to which the function PUTs its
answer (``SUCCESS``, or ``FAILED`` with the reason, which CloudFormation shows and which rolls the deployment back).
On ``Update`` the previous deployment's tables (``OldResourceProperties``) tell which tables were added and removed
(``sleeper.table.reuse.existing``, ``sleeper.table.retain.after.removal``). On ``Delete`` nothing is done: the tables
go with the instance's DynamoDB tables and buckets, or stay with them when ``sleeper.retain.infra.after.destroy``
keeps those.
"""

from __future__ import annotations

import json
import logging
import urllib.request
from collections.abc import Callable, Mapping
from typing import Any

from sleeper.core import SleeperError
from sleeper.lambdas._common import aws_instance, lambda_handler
from sleeper.runtime import define_tables, parse_tables
from sleeper.runtime.aws import AwsApi

LOGGER = logging.getLogger("sleeper.lambdas.table_definer")
TABLES_PROPERTY = "Tables"
"""The resource property holding the tables, as JSON text."""
PHYSICAL_ID = "sleeper-tables"

Sender = Callable[[str, bytes], None]


def _put(url: str, body: bytes) -> None:
    if not url.startswith("https://"):
        raise ValueError(f"the response URL must be https: {url[:40]!r}")
    request = urllib.request.Request(
        url, data=body, method="PUT", headers={"Content-Type": "", "Content-Length": str(len(body))}
    )
    with urllib.request.urlopen(request, timeout=60) as response:  # noqa: S310 - https only, checked above
        response.read()


@lambda_handler
def handler(event: Mapping[str, Any], context: object, send: Sender = _put) -> dict[str, Any]:
    """Answers one custom resource request; returns the answer it sent."""
    request_type = str(event.get("RequestType", ""))
    status, reason = "SUCCESS", ""
    try:
        if request_type in ("Create", "Update"):
            tables = parse_tables(str(event.get("ResourceProperties", {}).get(TABLES_PROPERTY, "[]")))
            old = event.get("OldResourceProperties") if request_type == "Update" else None
            previous = parse_tables(str(old.get(TABLES_PROPERTY, "[]"))) if isinstance(old, Mapping) else None
            done = define_tables(AwsApi(aws_instance()), tables, previous)
            reason = ", ".join(f"{t.name} {t.action}" for t in done) or "no tables"
            LOGGER.info("tables: %s", reason)
        elif request_type != "Delete":
            raise SleeperError(f"unknown request type {request_type!r}")
    except SleeperError as error:
        status, reason = "FAILED", str(error)
        LOGGER.error("tables not defined: %s", error)
    except Exception as error:  # CloudFormation waits for an answer: every failure must send one
        status, reason = "FAILED", f"{type(error).__name__}: {error}"
        LOGGER.exception("tables not defined")
    answer = {
        "Status": status,
        "Reason": reason[:3000] or status,
        "PhysicalResourceId": str(event.get("PhysicalResourceId") or PHYSICAL_ID),
        "StackId": event.get("StackId"),
        "RequestId": event.get("RequestId"),
        "LogicalResourceId": event.get("LogicalResourceId"),
    }
    send(str(event.get("ResponseURL", "")), json.dumps(answer).encode("utf-8"))
    return answer
