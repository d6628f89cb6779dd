"""Where the Lambda image and the ECS/EMR container images come from.

``asset`` mode: images are Docker image assets built by ``cdk deploy`` from ``containers/<image>/Dockerfile`` with
the repository root as build context. Synthesis only stages the files (no Docker needed); ``cdk deploy`` builds and
pushes them to the bootstrap ECR repository.

``ecr`` mode (the default when the package is installed, with no ``containers/`` beside it): images were pushed
beforehand to ECR repositories ``<sleeper.ecr.repository.prefix>/<image>`` with the tag given as context ``imageTag``
(default ``latest``), as Sleeper's own deployment does; ``sleeper artefacts`` creates and fills them
(:mod:`sleeper.core.deploy.artefacts`).

Every Lambda function uses the one Lambda image; the image command is overridden per function with its handler.
The Lambda image is built for ``sleeper.lambda.cpu.architecture`` (ARM64 by default: its base image and every
dependency's wheel exist for both), the compaction and bulk export images for their tasks' ``...cpu.architecture``,
the others for x86_64 (:meth:`Images.platform`).
"""

from __future__ import annotations

from aws_cdk import Stack
from aws_cdk import aws_ecr as ecr
from aws_cdk import aws_ecr_assets as ecr_assets
from aws_cdk import aws_ecs as ecs
from aws_cdk import aws_lambda as lambda_
from constructs import Construct

from sleeper.cdk.context import ARTEFACTS_ASSET, DeployContext
from sleeper.core import LAMBDA_IMAGE
from sleeper.core.deploy import ARM64, image_platform
from sleeper.core.properties import instance_common as common

BUILD_CONTEXT_EXCLUDES = (
    ".git",
    ".venv",
    "**/__pycache__",
    "**/*.pyc",
    ".mypy_cache",
    ".ruff_cache",
    ".pytest_cache",
    ".hypothesis",
    "cdk.out",
    "node_modules",
    "tests",
    "benchmarks",
    "docs",
    "build",
    "*.egg-info",
)
"""Paths left out of the Docker build context (the repository root)."""


def lambda_command(handler: str) -> list[str]:
    """The image command that runs a ``module:function`` handler with the Lambda runtime interface client."""
    return [handler.replace(":", ".")]


class Images:
    """Container images of an instance."""

    def __init__(self, ctx: DeployContext) -> None:
        self._ctx = ctx
        self._repositories: dict[tuple[str, str], ecr.IRepository] = {}
        self._assets: dict[tuple[str, str], ecr_assets.DockerImageAsset] = {}

    @property
    def mode(self) -> str:
        """``asset`` or ``ecr``."""
        return self._ctx.artefacts.mode

    def dockerfile(self, image: str) -> str:
        """The Dockerfile of an image, relative to the repository root."""
        return f"containers/{image}/Dockerfile"

    def repository(self, scope: Construct, image: str) -> ecr.IRepository:
        """The ECR repository an image is pulled from in ``ecr`` mode (one reference per stack)."""
        stack = Stack.of(scope)
        key = (stack.node.path, image)
        if key not in self._repositories:
            prefix = self._ctx.get(common.ECR_REPOSITORY_PREFIX) or self._ctx.instance_id
            self._repositories[key] = ecr.Repository.from_repository_name(
                stack, f"{image.title().replace('-', '')}Repository", f"{prefix.lower()}/{image}"
            )
        return self._repositories[key]

    def asset(self, scope: Construct, image: str) -> ecr_assets.DockerImageAsset:
        """The Docker image asset of an image in ``asset`` mode (one per stack; identical assets are built once)."""
        stack = Stack.of(scope)
        key = (stack.node.path, image)
        if key not in self._assets:
            self._assets[key] = ecr_assets.DockerImageAsset(
                stack,
                f"{image.title().replace('-', '')}Image",
                directory=str(self._ctx.artefacts.root),
                file=self.dockerfile(image),
                exclude=list(BUILD_CONTEXT_EXCLUDES),
                platform=self.platform(image),
            )
        return self._assets[key]

    def platform(self, image: str) -> ecr_assets.Platform:
        """The platform an image is built for in ``asset`` mode: that of what runs it (the functions for the Lambda
        image, compaction and bulk export tasks for theirs, by their ``...cpu.architecture`` properties); x86_64 for
        the others (:func:`sleeper.core.deploy.artefacts.image_platform`, which ``sleeper artefacts`` builds by)."""
        arm = image_platform(self._ctx.properties, image) == ARM64
        return ecr_assets.Platform.LINUX_ARM64 if arm else ecr_assets.Platform.LINUX_AMD64

    def lambda_code(self, scope: Construct, handler: str) -> lambda_.DockerImageCode:
        """The Lambda image running one handler."""
        command = lambda_command(handler)
        if self.mode == ARTEFACTS_ASSET:
            return lambda_.DockerImageCode.from_image_asset(
                str(self._ctx.artefacts.root),
                file=self.dockerfile(LAMBDA_IMAGE),
                cmd=command,
                exclude=list(BUILD_CONTEXT_EXCLUDES),
                platform=self.platform(LAMBDA_IMAGE),
            )
        return lambda_.DockerImageCode.from_ecr(
            self.repository(scope, LAMBDA_IMAGE), tag_or_digest=self._ctx.artefacts.tag, cmd=command
        )

    def ecs_image(self, scope: Construct, image: str) -> ecs.ContainerImage:
        """An image for an ECS container."""
        if self.mode == ARTEFACTS_ASSET:
            return ecs.ContainerImage.from_docker_image_asset(self.asset(scope, image))
        return ecs.ContainerImage.from_ecr_repository(self.repository(scope, image), tag=self._ctx.artefacts.tag)

    def image_uri(self, scope: Construct, image: str) -> str:
        """The URI of an image (for EMR Serverless)."""
        if self.mode == ARTEFACTS_ASSET:
            return self.asset(scope, image).image_uri
        return self.repository(scope, image).repository_uri_for_tag(self._ctx.artefacts.tag)
