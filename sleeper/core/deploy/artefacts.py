"""What an instance's artefacts are and where they go: the artefacts bucket (``sleeper.jars.bucket``) holding user
iterator wheels, and the ECR repositories ``<sleeper.ecr.repository.prefix>/<image>`` holding the container images,
as Sleeper's artefacts deployment creates them (its jars bucket and image repositories).

``sleeper artefacts`` creates and fills them from this plan, the CDK app pulls the images from those repositories in
``ecr`` mode (:mod:`sleeper.cdk.artefacts`), and ``sleeper teardown`` removes them with an instance that owns them.
"""

from __future__ import annotations

from dataclasses import dataclass

from sleeper.core import naming
from sleeper.core.deploy.plan import wanted_optional_stacks
from sleeper.core.operations import (
    BULK_EXPORT_IMAGE,
    BULK_IMPORT_EKS_IMAGE,
    BULK_IMPORT_IMAGE,
    COMPACTION_IMAGE,
    INGEST_IMAGE,
    LAMBDA_IMAGE,
)
from sleeper.core.properties import InstanceProperties
from sleeper.core.properties import instance_common as common
from sleeper.core.properties.instance_bulk import BULK_EXPORT_TASK_CPU_ARCHITECTURE
from sleeper.core.properties.instance_compaction import COMPACTION_TASK_CPU_ARCHITECTURE
from sleeper.core.user_code import user_wheel_keys

__all__ = [
    "ARM64",
    "IMAGES_BY_STACK",
    "X86_64",
    "ArtefactsPlan",
    "ImagePlan",
    "artefacts_plan",
    "image_platform",
    "jars_bucket_name",
]

ARM64 = "linux/arm64"
X86_64 = "linux/amd64"

JARS = "jars"
"""The kind of the artefacts bucket in its name, as Sleeper names its jars bucket."""

IMAGES_BY_STACK: dict[str, str] = {
    "CompactionStack": COMPACTION_IMAGE,
    "IngestStack": INGEST_IMAGE,
    "EmrServerlessBulkImportStack": BULK_IMPORT_IMAGE,
    "BulkExportStack": BULK_EXPORT_IMAGE,
    "EksBulkImportStack": BULK_IMPORT_EKS_IMAGE,
}
"""The optional stacks that run a container image of their own; the Lambda image is always needed."""


def jars_bucket_name(properties: InstanceProperties) -> str:
    """``sleeper.jars.bucket``, or Sleeper's name for it, ``sleeper-<artefacts deployment id>-jars``."""
    return properties.get(common.JARS_BUCKET) or naming.resource_name(
        naming.clean_id(_artefacts_id(properties)), "jars"
    )


def _artefacts_id(properties: InstanceProperties) -> str:
    return properties.get(common.ARTEFACTS_DEPLOYMENT_ID) or properties.get(common.ID) or ""


def image_platform(properties: InstanceProperties, image: str) -> str:
    """The platform an image is built for: that of what runs it (the functions for the Lambda image, compaction and
    bulk export tasks for theirs, by their ``...cpu.architecture`` properties; ARM64 by default for the first two);
    x86_64 for the others."""
    if image == LAMBDA_IMAGE:
        arm = (properties.get(common.LAMBDA_CPU_ARCHITECTURE) or "ARM64").upper() == "ARM64"
    elif image == COMPACTION_IMAGE:
        arm = (properties.get(COMPACTION_TASK_CPU_ARCHITECTURE) or "ARM64").upper() == "ARM64"
    elif image == BULK_EXPORT_IMAGE:
        arm = (properties.get(BULK_EXPORT_TASK_CPU_ARCHITECTURE) or "X86_64").upper() == "ARM64"
    else:
        arm = False
    return ARM64 if arm else X86_64


@dataclass(frozen=True, slots=True)
class ImagePlan:
    """One image to build and push.

    Attributes:
        image: The image name (``containers/<image>/Dockerfile``).
        repository: The ECR repository name, ``<prefix>/<image>``.
        platform: The Docker platform to build for.
    """

    image: str
    repository: str
    platform: str

    @property
    def dockerfile(self) -> str:
        """The Dockerfile, relative to the repository root (the build context)."""
        return f"containers/{self.image}/Dockerfile"


@dataclass(frozen=True, slots=True)
class ArtefactsPlan:
    """Where an instance's artefacts go.

    Attributes:
        instance_id: ``sleeper.id``.
        deployment_id: ``sleeper.artefacts.deployment`` (the instance id unless shared with other instances).
        bucket: The artefacts (jars) bucket.
        images: The images the instance's stacks run, each with its repository.
        wheel_keys: The keys of the iterator wheels ``sleeper.userjars`` lists in the bucket.
    """

    instance_id: str
    deployment_id: str
    bucket: str
    images: tuple[ImagePlan, ...]
    wheel_keys: tuple[str, ...]

    @property
    def owned_by_instance(self) -> bool:
        """Whether the artefacts are the instance's own (not a deployment shared with other instances), so tearing
        the instance down removes them, as Sleeper removes an instance's ``<id>-artefacts`` stack."""
        return self.deployment_id == self.instance_id

    @property
    def repositories(self) -> tuple[str, ...]:
        """The ECR repository names."""
        return tuple(plan.repository for plan in self.images)


def artefacts_plan(properties: InstanceProperties, *, all_images: bool = False) -> ArtefactsPlan:
    """The artefacts of an instance: the Lambda image and the image of each optional stack it deploys (every image
    with ``all_images``), the repositories named as the CDK app pulls them, and the artefacts bucket.

    Raises:
        ValueError: If ``sleeper.id`` is not set.
    """
    instance_id = properties.get(common.ID)
    if not instance_id:
        raise ValueError("sleeper.id must be set")
    wanted = wanted_optional_stacks(properties)
    names = [LAMBDA_IMAGE] + [image for stack, image in IMAGES_BY_STACK.items() if all_images or stack in wanted]
    prefix = (properties.get(common.ECR_REPOSITORY_PREFIX) or instance_id).lower()
    images = tuple(ImagePlan(name, f"{prefix}/{name}", image_platform(properties, name)) for name in names)
    return ArtefactsPlan(
        instance_id=instance_id,
        deployment_id=_artefacts_id(properties),
        bucket=jars_bucket_name(properties),
        images=images,
        wheel_keys=tuple(user_wheel_keys(properties)),
    )
