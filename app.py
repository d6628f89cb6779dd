"""The Sleeper CDK app: ``cdk deploy`` creates one instance from an instance properties file.

Context (``cdk deploy -c key=value``):

- ``propertiesfile`` (or ``instanceproperties``): path of the instance properties file. Without it, an example
  instance is synthesized with every optional stack this port supports.
- ``id``: overrides ``sleeper.id``.
- ``tags``: extra tags ``key1,value1,key2,value2`` (added to ``sleeper.tags``).
- ``artefacts``: ``asset`` (build images from ``containers/`` at deploy) or ``ecr`` (pull pushed images);
  default ``asset`` when ``containers/lambda/Dockerfile`` exists, otherwise ``ecr``.
- ``imagetag``: the image tag in ``ecr`` mode (default ``latest``).

The stack is named after the instance id and deployed to ``CDK_DEFAULT_ACCOUNT``/``CDK_DEFAULT_REGION`` (or
``sleeper.account``/``sleeper.region``).
"""

from __future__ import annotations

import os
from pathlib import Path

import aws_cdk as cdk

from sleeper.core.properties import InstanceProperties
from sleeper.core.properties import instance_common as common
from stacks.context import ARTEFACTS_ASSET, ARTEFACTS_ECR, Artefacts, DeployContext, tags_from_context
from stacks.instance import SUPPORTED_OPTIONAL_STACKS, SleeperInstanceStack

ROOT = Path(__file__).resolve().parent

EXAMPLE_OPTIONAL_STACKS = (
    "IngestStack",
    "IngestBatcherStack",
    "EmrServerlessBulkImportStack",
    "EmrBulkImportStack",
    "PersistentEmrBulkImportStack",
    "EksBulkImportStack",
    "QueryStack",
    "WebSocketQueryStack",
    "RestApiStack",
    "BulkExportStack",
    "KeepLambdaWarmStack",
    "CompactionStack",
    "GarbageCollectorStack",
    "PartitionSplittingStack",
    "TableMetricsStack",
    "AthenaStack",
)
assert set(EXAMPLE_OPTIONAL_STACKS) == SUPPORTED_OPTIONAL_STACKS


def example_properties() -> InstanceProperties:
    """An example instance: every supported optional stack, compaction on EC2 and Fargate, retained data."""
    return InstanceProperties(
        {
            "sleeper.id": "example",
            "sleeper.optional.stacks": ",".join(EXAMPLE_OPTIONAL_STACKS),
            "sleeper.compaction.ecs.launch.type": "EC2",
            "sleeper.errors.email": "sleeper-alarms@example.com",
            "sleeper.tags": "project,sleeper,environment,example",
        }
    )


def load_properties(app: cdk.App) -> InstanceProperties:
    """The instance properties named by the context, or the example instance.

    Raises:
        ValueError: If the properties are invalid.
    """
    path = app.node.try_get_context("propertiesfile") or app.node.try_get_context("instanceproperties")
    properties = InstanceProperties.from_text(Path(path).read_text(encoding="utf-8")) if path else example_properties()
    instance_id = app.node.try_get_context("id")
    if instance_id:
        properties.set(common.ID, instance_id)
    problems = properties.problems()
    if problems:
        raise ValueError("invalid instance properties:\n  " + "\n  ".join(problems))
    return properties


def artefacts(app: cdk.App, root: Path = ROOT) -> Artefacts:
    """Where images come from, from the context."""
    mode = app.node.try_get_context("artefacts")
    if not mode:
        mode = ARTEFACTS_ASSET if (root / "containers" / "lambda" / "Dockerfile").is_file() else ARTEFACTS_ECR
    if mode not in (ARTEFACTS_ASSET, ARTEFACTS_ECR):
        raise ValueError(f"context artefacts must be {ARTEFACTS_ASSET} or {ARTEFACTS_ECR}, not {mode!r}")
    return Artefacts(mode=mode, root=root, tag=app.node.try_get_context("imagetag") or "latest")


FEATURE_FLAGS = {
    "@aws-cdk/aws-s3:serverAccessLogsUseBucketPolicy": True,
    "@aws-cdk/aws-ec2:restrictDefaultSecurityGroup": True,
    "@aws-cdk/aws-sqs:dlqEncryption": True,
    "@aws-cdk/aws-iam:minimizePolicies": True,
    "@aws-cdk/aws-ecs:arnFormatIncludesClusterName": True,
}
"""CDK feature flags the stacks rely on (also in cdk.json); set here too so tests and ``python app.py`` agree."""


def build(app: cdk.App, *, root: Path = ROOT) -> SleeperInstanceStack:
    """Adds the instance stack (and its tags) to an app."""
    for flag, enabled in FEATURE_FLAGS.items():
        if app.node.try_get_context(flag) is None:
            app.node.set_context(flag, enabled)
    properties = load_properties(app)
    account = os.environ.get("CDK_DEFAULT_ACCOUNT") or properties.get("sleeper.account")
    region = os.environ.get("CDK_DEFAULT_REGION") or properties.get("sleeper.region")
    env = cdk.Environment(account=account, region=region) if account and region else None
    ctx = DeployContext.create(properties, account=account if env else None, region=region if env else None,
                               artefacts=artefacts(app, root))  # fmt: skip
    stack = SleeperInstanceStack(app, ctx.instance_id, ctx, stack_name=ctx.instance_id, env=env)
    tags = {**properties.tags(), **tags_from_context(app.node.try_get_context("tags"))}
    excluded = properties.get_list(common.TAGS_EXCLUDED_RESOURCES)
    for key, value in tags.items():
        cdk.Tags.of(app).add(key, value, exclude_resource_types=excluded or None)
    stack_tag = properties.get(common.STACK_TAG_NAME)
    if stack_tag:
        cdk.Tags.of(stack).add(stack_tag, ctx.instance_id)
    return stack


def main() -> None:
    """Synthesizes the app."""
    app = cdk.App(analytics_reporting=False)
    build(app)
    app.synth()


if __name__ == "__main__":
    main()
