"""What a deployment is built from: the instance properties, the account and region, and where artefacts come from."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import aws_cdk as cdk

from sleeper.core import naming
from sleeper.core.deploy import TableConfiguration, wanted_optional_stacks
from sleeper.core.properties import InstanceProperties, PropertyRef
from sleeper.core.properties import instance_common as common

ARTEFACTS_ASSET = "asset"
"""Container images are built from ``containers/`` by ``cdk deploy`` (needs Docker at deploy time, not at synth)."""
ARTEFACTS_ECR = "ecr"
"""Container images are pulled from ECR repositories ``<sleeper.ecr.repository.prefix>/<image>`` (pushed before)."""

RETAIN = cdk.RemovalPolicy.RETAIN
DESTROY = cdk.RemovalPolicy.DESTROY

FEATURE_FLAGS = {
    "@aws-cdk/aws-s3:serverAccessLogsUseBucketPolicy": True,
    "@aws-cdk/aws-ec2:restrictDefaultSecurityGroup": True,
    "@aws-cdk/aws-sqs:dlqEncryption": True,
    "@aws-cdk/aws-iam:minimizePolicies": True,
    "@aws-cdk/aws-ecs:arnFormatIncludesClusterName": True,
    "@aws-cdk/core:stackRelativeExports": True,
    "@aws-cdk/aws-lambda:recognizeLayerVersion": True,
}
"""CDK feature flags the stacks rely on (also in a checkout's cdk.json). The app sets them on itself and the instance
stack on its own node unless the context gives them, so a synthesis is the same from a checkout, from an installed
package (no cdk.json), inside a user's own app and in tests."""

CHECKOUT_ROOT = Path(__file__).resolve().parents[2]
"""The directory holding the ``sleeper`` package: the repository root in a checkout (with ``containers/``), the
``site-packages`` directory when installed."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Artefacts:
    """Where the Lambda image and the container images come from.

    Attributes:
        mode: ``asset`` (build from ``containers/<image>/Dockerfile`` with the repository root as context) or ``ecr``.
        root: The repository root (the Docker build context in ``asset`` mode): the checkout holding this package.
        tag: The image tag in ``ecr`` mode.
    """

    mode: str = ARTEFACTS_ASSET
    root: Path = field(default_factory=lambda: CHECKOUT_ROOT)
    tag: str = "latest"

    @classmethod
    def default(cls, *, root: Path | None = None, tag: str = "latest") -> Artefacts:
        """``asset`` mode in a checkout (``containers/lambda/Dockerfile`` under ``root``), ``ecr`` mode otherwise: an
        installed package has no Dockerfiles, so its images are pushed to ECR first (``sleeper artefacts``)."""
        base = CHECKOUT_ROOT if root is None else root
        mode = ARTEFACTS_ASSET if has_containers(base) else ARTEFACTS_ECR
        return cls(mode=mode, root=base, tag=tag)


def has_containers(root: Path) -> bool:
    """Whether ``root`` holds the images' Dockerfiles (``containers/``), as a checkout does and an installed package
    does not."""
    return (root / "containers" / "lambda" / "Dockerfile").is_file()


@dataclass(frozen=True, slots=True, kw_only=True)
class DeployContext:
    """The instance being deployed: its properties plus the account and region (tokens when environment-agnostic).

    Attributes:
        properties: The instance properties as the user wrote them (validated by the app).
        instance_id: ``sleeper.id``.
        account: The account id (``Aws.ACCOUNT_ID`` unless the stack has a concrete environment).
        region: The region (``Aws.REGION`` likewise).
        artefacts: Where images come from.
        tables: The tables of the configuration, created by the table definer.
        deploy_paused: Whether scheduled rules are deployed disabled (``-c deployPaused=true``).
    """

    properties: InstanceProperties
    instance_id: str
    account: str
    region: str
    artefacts: Artefacts
    tables: tuple[TableConfiguration, ...] = ()
    deploy_paused: bool = False

    @classmethod
    def create(
        cls,
        properties: InstanceProperties,
        *,
        account: str | None = None,
        region: str | None = None,
        artefacts: Artefacts | None = None,
        tables: tuple[TableConfiguration, ...] = (),
        deploy_paused: bool = False,
    ) -> DeployContext:
        """A context for an instance; account and region default to deploy-time tokens."""
        instance_id = properties.get(common.ID)
        if not instance_id:
            raise ValueError("sleeper.id must be set")
        return cls(
            properties=properties,
            instance_id=instance_id,
            account=account or cdk.Aws.ACCOUNT_ID,
            region=region or cdk.Aws.REGION,
            artefacts=artefacts or Artefacts(),
            tables=tables,
            deploy_paused=deploy_paused,
        )

    # --- property access ------------------------------------------------------------------------------------------

    def get(self, prop: PropertyRef) -> str | None:
        """A property value (with defaults)."""
        return self.properties.get(prop)

    def get_int(self, prop: PropertyRef) -> int:
        """A property as an integer."""
        return self.properties.get_int(prop)

    def get_optional_int(self, prop: PropertyRef) -> int | None:
        """A property as an integer, or None if it has no value."""
        return self.properties.get_int(prop) if self.properties.get(prop) else None

    def get_bool(self, prop: PropertyRef) -> bool:
        """A property as a boolean."""
        return self.properties.get_bool(prop)

    def get_list(self, prop: PropertyRef) -> list[str]:
        """A property as a list."""
        return self.properties.get_list(prop)

    @property
    def optional_stacks(self) -> frozenset[str]:
        """The optional stacks to deploy, matched case-insensitively to Sleeper's names."""
        return wanted_optional_stacks(self.properties)

    def has(self, stack: str) -> bool:
        """Whether an optional stack is deployed."""
        return stack in self.optional_stacks

    @property
    def removal_policy(self) -> cdk.RemovalPolicy:
        """What happens to buckets and tables when the instance is destroyed."""
        return RETAIN if self.get_bool(common.RETAIN_INFRA_AFTER_DESTROY) else DESTROY

    @property
    def log_removal_policy(self) -> cdk.RemovalPolicy:
        """What happens to log groups when the instance is destroyed."""
        return RETAIN if self.get_bool(common.RETAIN_LOGS_AFTER_DESTROY) else DESTROY

    @property
    def tracing(self) -> bool:
        """Whether the instance's Lambda functions are traced with AWS X-Ray (``sleeper.tracing.enabled``)."""
        return self.get_bool(common.TRACING_ENABLED)

    @property
    def lambda_arm64(self) -> bool:
        """Whether the instance's Lambda functions run on ARM64 (``sleeper.lambda.cpu.architecture``), not x86_64."""
        return (self.get(common.LAMBDA_CPU_ARCHITECTURE) or "ARM64").upper() == "ARM64"

    # --- names ----------------------------------------------------------------------------------------------------

    def table_name(self, suffix: str) -> str:
        """A DynamoDB table name."""
        return naming.table_name(self.instance_id, suffix)

    def queue_name(self, logical_name: str) -> str:
        """An SQS queue name."""
        return naming.queue_name(self.instance_id, logical_name)

    def function_name(self, suffix: str) -> str:
        """A Lambda function, cluster or task family name."""
        return naming.function_name(self.instance_id, suffix)

    def rule_name(self, rule: str) -> str:
        """An EventBridge rule name."""
        return naming.rule_name(self.instance_id, rule)

    def policy_name(self, suffix: str) -> str:
        """A managed policy or role name."""
        return naming.policy_name(self.instance_id, suffix)

    def bucket_name(self, kind: str) -> str:
        """A bucket name."""
        return naming.bucket_name(self.instance_id, kind, self.account)


def tags_from_context(value: object) -> dict[str, str]:
    """Tags given as CDK context: a mapping, or ``key1,value1,key2,value2`` text.

    Raises:
        ValueError: If the text has an odd number of items.
    """
    if value is None or value == "":
        return {}
    if isinstance(value, Mapping):
        return {str(k): str(v) for k, v in value.items()}
    items = [item.strip() for item in str(value).split(",")]
    if len(items) % 2 != 0:
        raise ValueError(f"tags must be key,value pairs: {value!r}")
    return dict(zip(items[0::2], items[1::2], strict=True))
