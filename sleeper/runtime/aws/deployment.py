"""Operating a deployed instance by its id, as Sleeper's scripts do: the configuration saved in its config bucket
(``deployExisting.sh <id>``), its artefacts (the artefacts bucket and ECR repositories, ``uploadArtefacts``) and its
tear down (``tearDown.sh <id>``, in :mod:`sleeper.runtime.aws.teardown`).

The instance is found as ``aws:<id>`` is (:meth:`AwsRuntimeConfig.for_instance_id`): its config bucket
``sleeper-<id>-config-<account>``, the account from ``SLEEPER_ACCOUNT`` or STS, the region and endpoint from the usual
AWS configuration.
"""

from __future__ import annotations

import base64
import subprocess
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sleeper.adapters.aws import AwsClients, AwsError, S3PropertiesStore, _untyped_client, create_bucket, translated
from sleeper.core import InstanceNotFoundError, SleeperError
from sleeper.core.deploy import ArtefactsPlan
from sleeper.core.properties import INSTANCE_PROPERTIES_KEY, InstanceProperties, javaprops
from sleeper.runtime.aws.instance import AwsRuntimeConfig

__all__ = [
    "DeployedInstance",
    "DockerRunner",
    "load_deployed_instance",
    "upload_artefacts",
]

DockerRunner = Callable[[Sequence[str], bytes | None], int]
"""Runs a ``docker`` command line (with bytes for its standard input, or None) and returns its exit status."""


@dataclass(frozen=True, slots=True)
class DeployedInstance:
    """An instance as deployed: the properties its config bucket holds.

    Attributes:
        instance_id: The instance id.
        config: Where it is (config bucket, region, endpoint).
        properties: ``instance.properties`` from the config bucket (the user's values and those the deployment set).
        clients: Clients for its region.
        saved: Whether the properties were found in the config bucket (only ``sleeper.id`` is set otherwise).
    """

    instance_id: str
    config: AwsRuntimeConfig
    properties: InstanceProperties
    clients: AwsClients
    saved: bool = True

    @property
    def account(self) -> str:
        """The account, as the config bucket's name ends with it."""
        return self.config.config_bucket.rsplit("-", 1)[-1]

    def save_properties(self, directory: Path) -> Path:
        """Writes the saved ``instance.properties`` into a directory (created if needed), as Sleeper's deploy of an
        existing instance writes its ``generated/`` directory for the CDK; returns the file."""
        directory.mkdir(parents=True, exist_ok=True)
        path = directory / INSTANCE_PROPERTIES_KEY
        path.write_text(javaprops.dump(self.properties.to_dict()), encoding="utf-8")
        return path


def load_deployed_instance(
    instance_id: str, environ: Mapping[str, str] | None = None, *, missing_ok: bool = False
) -> DeployedInstance:
    """The instance with an id, from the ``instance.properties`` in its config bucket.

    Args:
        instance_id: The instance id.
        environ: The environment to find AWS by (the process's by default).
        missing_ok: Give the instance with only ``sleeper.id`` set when its properties cannot be found (a tear down
            of what is left), rather than refuse.

    Raises:
        InstanceNotFoundError: If the config bucket or its ``instance.properties`` does not exist (and not
            ``missing_ok``).
        AwsRuntimeConfigError: If no region is configured.
        AwsError: If AWS fails otherwise.
    """
    config = AwsRuntimeConfig.for_instance_id(instance_id, environ)
    clients = AwsClients(config.settings)
    try:
        values = S3PropertiesStore(clients.s3, config.config_bucket).load_instance()
    except AwsError as error:
        if error.code not in ("NoSuchBucket", "NoSuchKey", "404", "NotFound"):
            raise
        if not missing_ok:
            raise InstanceNotFoundError(
                f"instance {instance_id!r} is not deployed in region {config.settings.region}: "
                f"s3://{config.config_bucket}/{INSTANCE_PROPERTIES_KEY} does not exist ({error.code})"
            ) from None
        return DeployedInstance(instance_id, config, InstanceProperties({"sleeper.id": instance_id}), clients, False)
    return DeployedInstance(instance_id, config, InstanceProperties(values), clients)


def _run_docker(argv: Sequence[str], stdin: bytes | None) -> int:
    return subprocess.run(list(argv), input=stdin, check=False).returncode


def ecr_client(clients: AwsClients) -> Any:
    """An ECR client for the instance's region."""
    return _untyped_client(clients.settings, "ecr")


def _ensure_repository(ecr: Any, name: str) -> tuple[str, bool]:
    """The URI of a repository, created (scan on push, immutable tags off) if absent; and whether it was created."""
    try:
        with translated(f"DescribeRepositories {name}"):
            found = ecr.describe_repositories(repositoryNames=[name])["repositories"][0]
            return str(found["repositoryUri"]), False
    except AwsError as error:
        if error.code != "RepositoryNotFoundException":
            raise
    with translated(f"CreateRepository {name}"):
        created = ecr.create_repository(repositoryName=name, imageScanningConfiguration={"scanOnPush": True})
    return str(created["repository"]["repositoryUri"]), True


def _bucket_exists(clients: AwsClients, bucket: str) -> bool:
    try:
        with translated(f"HeadBucket {bucket}"):
            clients.s3.head_bucket(Bucket=bucket)
    except AwsError as error:
        if error.code in ("404", "NoSuchBucket", "NotFound"):
            return False
        raise
    return True


def upload_artefacts(
    plan: ArtefactsPlan,
    clients: AwsClients,
    *,
    root: Path,
    wheels: Sequence[Path] = (),
    tag: str = "latest",
    build_images: bool = True,
    docker: DockerRunner = _run_docker,
    report: Callable[[str], None] = print,
) -> list[str]:
    """Creates the artefacts bucket and ECR repositories (where absent), uploads the wheels to the bucket under their
    file names, and builds and pushes each image (``docker build --platform P -f containers/<image>/Dockerfile
    root``, tagged ``<repository uri>:<tag>``) after logging Docker in to the registry; returns the image URIs pushed.

    Raises:
        SleeperError: If a wheel is not a file, or a Docker command fails.
        AwsError: If AWS fails.
    """
    for wheel in wheels:
        if not wheel.is_file():
            raise SleeperError(f"{wheel}: no such wheel file")
    if _bucket_exists(clients, plan.bucket):
        report(f"artefacts bucket s3://{plan.bucket} exists")
    else:
        create_bucket(clients.s3, plan.bucket, clients.settings.region)
        report(f"created artefacts bucket s3://{plan.bucket}")
    for wheel in wheels:
        with translated(f"PutObject s3://{plan.bucket}/{wheel.name}"):
            clients.s3.put_object(Bucket=plan.bucket, Key=wheel.name, Body=wheel.read_bytes())
        report(f"uploaded {wheel} to s3://{plan.bucket}/{wheel.name}")
    ecr = ecr_client(clients)
    uris = {}
    for image in plan.images:
        uri, created = _ensure_repository(ecr, image.repository)
        uris[image.image] = uri
        report(f"{'created' if created else 'found'} ECR repository {image.repository}")
    if not build_images or not plan.images:
        return []
    with translated("GetAuthorizationToken"):
        auth = ecr.get_authorization_token()["authorizationData"][0]
    user, _, password = base64.b64decode(auth["authorizationToken"]).decode().partition(":")
    registry = str(auth["proxyEndpoint"])
    if docker(["docker", "login", "--username", user, "--password-stdin", registry], password.encode()) != 0:
        raise SleeperError(f"docker login to {registry} failed; see its output above")
    pushed = []
    for image in plan.images:
        target = f"{uris[image.image]}:{tag}"
        build = ["docker", "build", "--platform", image.platform, "-f", str(root / image.dockerfile), "-t", target,
                 str(root)]  # fmt: skip
        if docker(build, None) != 0:
            raise SleeperError(f"docker build of {image.image} ({image.dockerfile}) failed; see its output above")
        if docker(["docker", "push", target], None) != 0:
            raise SleeperError(f"docker push of {target} failed; see its output above")
        report(f"pushed {target}")
        pushed.append(target)
    return pushed
