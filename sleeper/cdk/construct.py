"""``SleeperInstance``: one Sleeper instance as a construct a CDK user puts in their own app.

Usage, in a CDK app of your own (``pip install 'sleeper-lsm[cdk]'``)::

    import aws_cdk as cdk
    from sleeper.cdk import SleeperInstance

    app = cdk.App()
    SleeperInstance(app, "MySleeper", "path/to/configuration-dir")  # or an instance.properties, or loaded objects
    app.synth()

The construct is the instance's CloudFormation stack (a ``cdk.Stack``, named after ``sleeper.id`` unless
``stack_name`` is given): put it in an app or a stage, beside your own stacks. It builds what ``python -m
sleeper.cdk.app`` (and so ``sleeper deploy``) builds for the same configuration, tags included; the app adds only
what comes from CDK context (overrides, ``newInstance``, cdk-nag).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import aws_cdk as cdk
from constructs import Construct

from sleeper.cdk.context import ARTEFACTS_ASSET, ARTEFACTS_ECR, Artefacts, DeployContext
from sleeper.cdk.instance import SleeperInstanceStack
from sleeper.core.deploy import (
    ConfigurationError,
    InstanceConfiguration,
    load_configuration_dir,
    load_properties_file,
)
from sleeper.core.properties import InstanceProperties
from sleeper.core.properties import instance_common as common

__all__ = ["Configuration", "SleeperInstance", "as_configuration"]

Configuration = InstanceConfiguration | InstanceProperties | str | os.PathLike[str]
"""What a :class:`SleeperInstance` is built from: a configuration directory (``instance.properties``,
``tags.properties`` and ``tables/``), an ``instance.properties`` file, or the loaded objects."""


def as_configuration(configuration: Configuration) -> InstanceConfiguration:
    """The instance configuration a :data:`Configuration` names (a directory or file read from disk).

    Raises:
        ConfigurationError: If a path is neither a directory nor a file, or cannot be read.
    """
    if isinstance(configuration, InstanceConfiguration):
        return configuration
    if isinstance(configuration, InstanceProperties):
        return InstanceConfiguration(properties=configuration)
    path = Path(configuration)
    if path.is_dir():
        return load_configuration_dir(path)
    if path.is_file():
        return load_properties_file(path)
    raise ConfigurationError(
        f"{path}: no such configuration: give a directory holding instance.properties, or an instance.properties file"
    )


def _artefacts(artefacts: Artefacts | str | None) -> Artefacts:
    if artefacts is None:
        return Artefacts.default()
    if isinstance(artefacts, Artefacts):
        return artefacts
    if artefacts not in (ARTEFACTS_ASSET, ARTEFACTS_ECR):
        raise ValueError(f"artefacts must be {ARTEFACTS_ASSET!r} or {ARTEFACTS_ECR!r}, not {artefacts!r}")
    return Artefacts(mode=artefacts)


class SleeperInstance(SleeperInstanceStack):
    """Every resource of one Sleeper instance, as a stack of a CDK app.

    Args:
        scope: The app or stage to add the stack to.
        construct_id: The construct id (the stack's name defaults to ``sleeper.id``, not to this).
        configuration: What to deploy (see :data:`Configuration`).
        account: The account to deploy to (with ``region``, a concrete environment; otherwise deploy-time tokens).
        region: The region to deploy to.
        artefacts: Where images come from: ``"ecr"`` (the ECR repositories ``sleeper artefacts`` fills, tag
            ``latest``), ``"asset"`` (built by ``cdk deploy`` from a checkout's ``containers/``) or an
            :class:`~sleeper.cdk.context.Artefacts`; by default ``asset`` in a checkout and ``ecr`` when installed.
        validate: Refuse invalid instance properties (the default), as the app does unless ``validate=false``.
        deploy_paused: Deploy the scheduled rules disabled.
        tags: More tags for every resource, beside ``sleeper.tags`` and ``tags.properties``.
        **kwargs: Passed to ``cdk.Stack`` (``stack_name``, ``env``, ``synthesizer``...).

    Raises:
        ValueError: If the instance properties are invalid (and ``validate``), or the optional stacks conflict.
        ConfigurationError: If a configuration path cannot be read.
    """

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        configuration: Configuration,
        *,
        account: str | None = None,
        region: str | None = None,
        artefacts: Artefacts | str | None = None,
        validate: bool = True,
        deploy_paused: bool = False,
        tags: Mapping[str, str] | None = None,
        **kwargs: Any,
    ) -> None:
        loaded = as_configuration(configuration)
        self.configuration = loaded
        properties = loaded.properties
        if validate:
            problems = properties.problems()
            if problems:
                raise ValueError("invalid instance properties:\n  " + "\n  ".join(problems))
        concrete = bool(account and region)
        ctx = DeployContext.create(
            properties,
            account=account if concrete else None,
            region=region if concrete else None,
            artefacts=_artefacts(artefacts),
            tables=loaded.tables,
            deploy_paused=deploy_paused,
        )
        kwargs.setdefault("stack_name", ctx.instance_id)
        if concrete:
            kwargs.setdefault("env", cdk.Environment(account=account, region=region))
        super().__init__(scope, construct_id, ctx, **kwargs)
        excluded = properties.get_list(common.TAGS_EXCLUDED_RESOURCES)
        for key, value in {**properties.tags(), **(tags or {})}.items():
            cdk.Tags.of(self).add(key, value, exclude_resource_types=excluded or None)
        stack_tag = properties.get(common.STACK_TAG_NAME)
        if stack_tag:
            cdk.Tags.of(self).add(stack_tag, ctx.instance_id)
