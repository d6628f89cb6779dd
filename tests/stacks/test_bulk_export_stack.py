"""BulkExportStack as the example instance deploys it (``sleeper.optional.stacks`` names it): its queues (receive limit
1, as Sleeper's), the Fargate task shape from the bulk export properties, the task creation rule, the
deployment-set properties, and least privilege (only the planner may delete, and only in the results bucket); and the
instance stack refusing it without the query stack, whose tracker table tracks exports."""

from __future__ import annotations

import json
import os
from typing import Any

import pytest

pytest.importorskip("aws_cdk")

import aws_cdk as cdk  # noqa: E402
from aws_cdk.assertions import Template  # noqa: E402

pytestmark = pytest.mark.slow

os.environ.setdefault("JSII_SILENCE_WARNING_UNTESTED_NODE_VERSION", "1")


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], dict[str, str]]:
    from sleeper.cdk import app as sleeper_app

    outdir = tmp_path_factory.mktemp("cdk.out")
    app = cdk.App(analytics_reporting=False, outdir=str(outdir), context={"artefacts": "ecr", "example": "true"})
    stack = sleeper_app.build(app)
    return Template.from_stack(stack.parts["BulkExport"]).to_json(), stack.core.cdk_properties


def _resources(template: dict[str, Any], kind: str) -> list[dict[str, Any]]:
    return [r["Properties"] for r in template["Resources"].values() if r["Type"] == kind]


def should_deploy_the_queues_as_sleeper_names_them_with_one_receive(built: tuple[dict[str, Any], Any]) -> None:
    template, _ = built
    queues = {q["QueueName"]: q for q in _resources(template, "AWS::SQS::Queue")}
    assert set(queues) == {
        "sleeper-example-BulkExport-Q",
        "sleeper-example-BulkExport-DLQ",
        "sleeper-example-BulkExportLeafPartition-Q",
        "sleeper-example-BulkExportLeafPartition-DLQ",
    }
    for name in ("sleeper-example-BulkExport-Q", "sleeper-example-BulkExportLeafPartition-Q"):
        assert queues[name]["RedrivePolicy"]["maxReceiveCount"] == 1
        assert queues[name]["VisibilityTimeout"] == 900


def should_size_the_fargate_task_from_the_bulk_export_properties(built: tuple[dict[str, Any], Any]) -> None:
    template, _ = built
    (task,) = _resources(template, "AWS::ECS::TaskDefinition")
    assert (task["Family"], task["Cpu"], task["Memory"]) == ("sleeper-example-BulkExportTaskOnFargate", "1024", "4096")
    assert task["ContainerDefinitions"][0]["Name"] == "BulkExportContainer"
    (rule,) = _resources(template, "AWS::Events::Rule")
    assert (rule["Name"], rule["ScheduleExpression"]) == ("example-BulkExportJobCreationRule", "rate(1 minute)")


def should_record_every_deployment_set_bulk_export_property(built: tuple[dict[str, Any], dict[str, str]]) -> None:
    _, properties = built
    from sleeper.core.properties import instance_cdk as cdkp

    for prop in (
        cdkp.BULK_EXPORT_QUEUE_URL, cdkp.LEAF_PARTITION_BULK_EXPORT_QUEUE_URL, cdkp.BULK_EXPORT_S3_BUCKET,
        cdkp.BULK_EXPORT_CLUSTER, cdkp.BULK_EXPORT_TASK_FARGATE_DEFINITION_FAMILY,
        cdkp.BULK_EXPORT_TASK_CREATION_CLOUDWATCH_RULE, cdkp.BULK_EXPORT_TASK_CREATION_LAMBDA_FUNCTION,
        cdkp.BULK_EXPORT_LAMBDA_ROLE_ARN,
    ):  # fmt: skip
        assert prop.name in properties


def should_let_only_the_planner_delete_and_only_in_the_results_bucket(built: tuple[dict[str, Any], Any]) -> None:
    template, _ = built
    deleting = []
    for logical_id, resource in template["Resources"].items():
        if resource["Type"] != "AWS::IAM::Policy":
            continue
        for statement in resource["Properties"]["PolicyDocument"]["Statement"]:
            actions = statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]
            if any(a.startswith("s3:Delete") for a in actions):
                deleting.append((logical_id, json.dumps(statement["Resource"])))
    assert deleting, "the planner deletes an earlier run's files of the same export"
    assert all(logical_id.startswith("Planner") for logical_id, _ in deleting)
    assert all("bulk-export-results" in resources or "ResultsBucket" in resources for _, resources in deleting)
    assert not any("table-data" in resources for _, resources in deleting)


@pytest.mark.parametrize(
    ("stacks", "refused"),
    [
        ({"BulkExportStack"}, True),
        ({"BulkExportStack", "IngestStack"}, True),
        ({"BulkExportStack", "QueryStack"}, False),
        ({"BulkExportStack", "WebSocketQueryStack"}, False),
        ({"IngestStack"}, False),
    ],
)
def should_refuse_bulk_export_without_the_query_stack(stacks: set[str], refused: bool) -> None:
    from sleeper.cdk.instance import OptionalStacksError, check_optional_stacks

    if not refused:
        check_optional_stacks(frozenset(stacks))
        return
    with pytest.raises(OptionalStacksError, match="BulkExportStack without QueryStack"):
        check_optional_stacks(frozenset(stacks))
