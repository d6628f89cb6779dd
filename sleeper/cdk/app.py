"""The Sleeper CDK app: ``cdk deploy --app 'python -m sleeper.cdk.app'`` creates one instance from a configuration,
as Sleeper's ``SleeperCdkApp``. It ships in the package (``pip install 'sleeper-lsm[cdk]'``); ``sleeper deploy`` and a
checkout's ``cdk.json`` run it, and ``python -m sleeper.cdk.app -c name=value ...`` synthesizes into ``cdk.out/``.

Context (``cdk deploy -c name=value``), Sleeper 0.36.1's names (``sleeper.core.deploy.context`` lists them all):

- ``configurationDir``: a directory with ``instance.properties``, ``tags.properties`` and tables
  (``tables/<any>/table.properties``, ``schema.json``, ``splits.txt``), deployed with the instance and kept on
  redeploys; or ``propertiesFile``: an ``instance.properties`` alone (and an adjacent ``tags.properties``). Exactly
  one. The older ``propertiesfile`` and ``instanceproperties`` are still accepted.
- ``id``, ``artefactsId``, ``vpc``, ``subnets``: override ``sleeper.id``, ``sleeper.artefacts.deployment``,
  ``sleeper.vpc``, ``sleeper.subnets``.
- ``validate`` (default true), ``newInstance``, ``deployPaused``, ``skipVersionCheck``.
- This port's own: ``tags``, ``artefacts`` (``asset`` or ``ecr``), ``imageTag``, ``nag`` (run cdk-nag in the
  synthesis) and ``example`` (synthesize the example instance, every supported optional stack).

Any other context name is an error naming it. The stack is named after the instance id and deployed to
``CDK_DEFAULT_ACCOUNT``/``CDK_DEFAULT_REGION`` (or ``sleeper.account``/``sleeper.region``).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import aws_cdk as cdk

from sleeper.cdk.construct import SleeperInstance
from sleeper.cdk.context import (
    ARTEFACTS_ASSET,
    ARTEFACTS_ECR,
    CHECKOUT_ROOT,
    FEATURE_FLAGS,
    Artefacts,
    has_containers,
    tags_from_context,
)
from sleeper.core import SleeperError, naming
from sleeper.core.deploy import (
    SUPPORTED_OPTIONAL_STACKS,
    DeployContextError,
    DeployOptions,
    InstanceConfiguration,
    load_configuration_dir,
    load_properties_file,
    read_context,
)
from sleeper.core.deploy import context as keys
from sleeper.core.properties import InstanceProperties
from sleeper.core.properties import instance_common as common

ROOT = CHECKOUT_ROOT
"""The directory holding the package: a checkout's root (whose ``containers/`` the ``asset`` mode builds from), or
``site-packages``."""

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
    "DashboardStack",
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


def options(app: cdk.App) -> DeployOptions:
    """The app's context, checked.

    Raises:
        DeployContextError: If a context name is unknown or a value invalid.
    """
    return read_context(app.node.get_all_context())


def load_configuration(app: cdk.App) -> InstanceConfiguration:
    """The instance (and tables) the context names, with the context's overrides, validated unless
    ``validate=false``.

    Raises:
        DeployContextError: If the context names no configuration, or more than one.
        ConfigurationError: If a file cannot be read or a table is invalid.
        ValueError: If the instance properties are invalid.
    """
    given = options(app)
    properties_file, directory = given.get(keys.PROPERTIES_FILE), given.get(keys.CONFIGURATION_DIR)
    if given.flag(keys.EXAMPLE):
        if properties_file or directory:
            raise DeployContextError(f"{keys.EXAMPLE}=true deploys the example instance: give no configuration")
        configuration = InstanceConfiguration(properties=example_properties())
    elif properties_file:
        configuration = load_properties_file(Path(properties_file))
    elif directory:
        configuration = load_configuration_dir(Path(directory))
    else:
        raise DeployContextError(
            f"set the {keys.CONFIGURATION_DIR!r} or {keys.PROPERTIES_FILE!r} context variable "
            f"(-c {keys.CONFIGURATION_DIR}=DIR), or -c {keys.EXAMPLE}=true for the example instance"
        )
    properties = configuration.properties
    given.apply_overrides(properties)
    if given.flag(keys.VALIDATE, default=True):
        problems = properties.problems()
        if problems:
            raise ValueError("invalid instance properties:\n  " + "\n  ".join(problems))
    return configuration


def load_properties(app: cdk.App) -> InstanceProperties:
    """The instance properties the context names (see :func:`load_configuration`)."""
    return load_configuration(app).properties


def artefacts(app: cdk.App, root: Path = ROOT) -> Artefacts:
    """Where images come from, from the context: by default ``asset`` in a checkout (``containers/`` under
    ``root``) and ``ecr`` when the package is installed.

    Raises:
        DeployContextError: If the mode is unknown, or ``asset`` where there are no Dockerfiles to build.
    """
    given = options(app)
    tag = given.get(keys.IMAGE_TAG) or "latest"
    mode = given.get(keys.ARTEFACTS)
    if not mode:
        return Artefacts.default(root=root, tag=tag)
    if mode not in (ARTEFACTS_ASSET, ARTEFACTS_ECR):
        raise DeployContextError(f"context artefacts must be {ARTEFACTS_ASSET} or {ARTEFACTS_ECR}, not {mode!r}")
    if mode == ARTEFACTS_ASSET and not has_containers(root):
        raise DeployContextError(
            f"artefacts=asset builds the images from containers/ of a checkout, and {root} has none: push them with "
            "'sleeper artefacts' and deploy with artefacts=ecr"
        )
    return Artefacts(mode=mode, root=root, tag=tag)


def instance_exists(instance_id: str, account: str, region: str) -> bool:
    """Whether the config bucket of an instance exists (or its name is taken), as ``newInstance`` checks.

    The CDK app calls AWS itself here, as Sleeper's does (stacks and the app import only ``sleeper.core``)."""
    import boto3
    from botocore.exceptions import ClientError

    s3 = boto3.client("s3", region_name=region, endpoint_url=os.environ.get("AWS_ENDPOINT_URL") or None)
    try:
        s3.head_bucket(Bucket=naming.config_bucket_name(instance_id, account))
    except ClientError as error:
        if error.response.get("Error", {}).get("Code") in ("404", "NoSuchBucket", "NotFound"):
            return False
        raise
    return True


def build(app: cdk.App, *, root: Path = ROOT) -> SleeperInstance:
    """Adds the instance stack (a :class:`~sleeper.cdk.construct.SleeperInstance`, with its tags) to an app, from
    the app's context.

    Raises:
        SleeperError: If the context or the configuration is invalid (``DeployContextError``, ``ConfigurationError``).
        ValueError: If the instance properties are invalid.
    """
    for flag, enabled in FEATURE_FLAGS.items():
        if app.node.try_get_context(flag) is None:
            app.node.set_context(flag, enabled)
    given = options(app)
    configuration = load_configuration(app)
    properties = configuration.properties
    account = os.environ.get("CDK_DEFAULT_ACCOUNT") or properties.get("sleeper.account")
    region = os.environ.get("CDK_DEFAULT_REGION") or properties.get("sleeper.region")
    instance_id = properties.get(common.ID) or ""
    if given.flag(keys.NEW_INSTANCE):
        if not (account and region):
            raise DeployContextError(
                f"{keys.NEW_INSTANCE}=true checks the account for the instance: set CDK_DEFAULT_ACCOUNT and "
                "CDK_DEFAULT_REGION (the cdk command does, given credentials)"
            )
        if instance_exists(instance_id, account, region):
            raise DeployContextError(
                f"instance {instance_id!r} already exists (its config bucket "
                f"{naming.config_bucket_name(instance_id, account)} does): {keys.NEW_INSTANCE}=true refuses to "
                "deploy over it"
            )
    stack = SleeperInstance(app, instance_id, configuration, account=account, region=region,
                            artefacts=artefacts(app, root), validate=False,  # load_configuration validated
                            deploy_paused=given.flag(keys.DEPLOY_PAUSED),
                            tags=tags_from_context(given.get(keys.TAGS)))  # fmt: skip
    if given.flag(keys.SKIP_VERSION_CHECK):
        cdk.Annotations.of(stack).add_info(
            f"{keys.SKIP_VERSION_CHECK}: this port checks no version of a deployed instance, so there is none to skip"
        )
    if given.flag(keys.NAG):
        from sleeper.cdk.nag import run_checks

        run_checks(app)
    return stack


def context_from_arguments(arguments: list[str]) -> dict[str, str]:
    """``-c name=value`` arguments (as ``python -m sleeper.cdk.app -c configurationDir=DIR`` takes them, like ``cdk``).

    Raises:
        DeployContextError: If an argument is not ``-c name=value``.
    """
    context: dict[str, str] = {}
    rest = list(arguments)
    while rest:
        flag = rest.pop(0)
        if flag not in ("-c", "--context") or not rest or "=" not in rest[0]:
            raise DeployContextError(f"unexpected argument {flag!r}: give context as -c name=value")
        name, _, value = rest.pop(0).partition("=")
        context[name] = value
    return context


def main(arguments: list[str] | None = None) -> None:
    """Synthesizes the app into ``cdk.out/`` of the working directory (or the directory the cdk command gives),
    with the cdk command's context or ``-c name=value`` arguments; a configuration mistake is one line on stderr and
    exit status 1."""
    outdir = Path(os.environ.get("CDK_OUTDIR") or Path.cwd() / "cdk.out")
    existed = outdir.exists()
    try:
        given = context_from_arguments(sys.argv[1:] if arguments is None else arguments)
        if given:
            cdk_context = json.loads(os.environ.get("CDK_CONTEXT_JSON") or "{}")
            app = cdk.App(analytics_reporting=False, outdir=str(outdir), context={**cdk_context, **given})
        else:
            app = cdk.App(analytics_reporting=False, outdir=str(outdir))
        build(app)
    except (SleeperError, ValueError) as error:
        print(f"sleeper cdk app: {error}", file=sys.stderr)
        if not existed and outdir.is_dir() and not any(outdir.iterdir()):
            outdir.rmdir()
        raise SystemExit(1) from None
    app.synth()


if __name__ == "__main__":
    main()
