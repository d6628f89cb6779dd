"""The CDK context of the Sleeper CDK app (``cdk deploy -c name=value``): Sleeper 0.36.1's names, the older names
still accepted, and this port's own. Any other name is refused, naming it: a misspelt ``propertiesFile`` must not
deploy something else."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from sleeper.core.exceptions import SleeperError
from sleeper.core.properties import InstanceProperties
from sleeper.core.properties import instance_common as common

PROPERTIES_FILE = "propertiesFile"
CONFIGURATION_DIR = "configurationDir"
ID = "id"
ARTEFACTS_ID = "artefactsId"
VPC = "vpc"
SUBNETS = "subnets"
VALIDATE = "validate"
NEW_INSTANCE = "newInstance"
SKIP_VERSION_CHECK = "skipVersionCheck"
DEPLOY_PAUSED = "deployPaused"
TAGS = "tags"
ARTEFACTS = "artefacts"
IMAGE_TAG = "imageTag"
NAG = "nag"
EXAMPLE = "example"

CONTEXT_KEYS: dict[str, str] = {
    PROPERTIES_FILE: "path of instance.properties (an adjacent tags.properties is read too); no tables",
    CONFIGURATION_DIR: "directory with instance.properties, tags.properties and tables (or that instance.properties)",
    ID: "overrides sleeper.id (the instance to deploy or destroy)",
    ARTEFACTS_ID: "sets sleeper.artefacts.deployment (the ECR repository prefix unless sleeper.ecr.repository.prefix)",
    VPC: "overrides sleeper.vpc",
    SUBNETS: "overrides sleeper.subnets (comma-separated)",
    VALIDATE: "true (default) or false: false skips validating the properties, e.g. to destroy an instance",
    NEW_INSTANCE: "true or false (default): true refuses to deploy when the instance's config bucket already exists",
    SKIP_VERSION_CHECK: "true or false: accepted for Sleeper's command lines; this port checks no version to skip",
    DEPLOY_PAUSED: "true or false (default): true deploys every scheduled rule disabled (sleeper resume starts them)",
    TAGS: "extra tags key1,value1,key2,value2 (added to sleeper.tags)",
    ARTEFACTS: "asset (build images from containers/ at deploy) or ecr (pull pushed images)",
    IMAGE_TAG: "the image tag in ecr mode (default latest)",
    NAG: "true or false (default): true runs the cdk-nag AwsSolutions checks in the synthesis",
    EXAMPLE: "true: synthesize the example instance (every supported optional stack) instead of a configuration",
}
"""Every context name the app reads, with what it does: Sleeper 0.36.1's (``SleeperInstanceProps``,
``SleeperNetworking``) and this port's own."""

ALIASES: dict[str, str] = {
    "propertiesfile": PROPERTIES_FILE,
    "instanceproperties": PROPERTIES_FILE,
    "instanceProperties": PROPERTIES_FILE,
    "newinstance": NEW_INSTANCE,
    "imagetag": IMAGE_TAG,
}
"""Older names still accepted: Sleeper before 0.36 (``propertiesfile``, ``newinstance``) and this port before it
took Sleeper's names (``instanceproperties``, ``imagetag``)."""

CDK_OWN_KEYS = frozenset({"acknowledged-issue-numbers"})
"""Context the CDK itself keeps (besides feature flags ``@aws-cdk/...`` and ``aws:cdk:...`` or lookup keys, which
hold a colon)."""

PROPERTY_OVERRIDES = {
    ID: common.ID,
    ARTEFACTS_ID: common.ARTEFACTS_DEPLOYMENT_ID,
    VPC: common.VPC_ID,
    SUBNETS: common.SUBNETS,
}
"""Context names that set an instance property, and the property each sets."""

BOOLEAN_KEYS = frozenset({VALIDATE, NEW_INSTANCE, SKIP_VERSION_CHECK, DEPLOY_PAUSED, NAG, EXAMPLE})


class DeployContextError(SleeperError):
    """The CDK context names something the app does not know, or gives an invalid value."""


@dataclass(frozen=True, slots=True, kw_only=True)
class DeployOptions:
    """The app's context, read and checked.

    Attributes:
        values: Each given context value by its current name (aliases resolved), as text.
    """

    values: Mapping[str, str]

    def get(self, key: str) -> str | None:
        """A value, or None if not given (or given empty)."""
        value = self.values.get(key)
        return value if value else None

    def flag(self, key: str, default: bool = False) -> bool:
        """A true/false value (already checked)."""
        value = self.get(key)
        return default if value is None else value.lower() == "true"

    def apply_overrides(self, properties: InstanceProperties) -> None:
        """Sets the properties the context overrides (``id``, ``artefactsId``, ``vpc``, ``subnets``, see
        :data:`PROPERTY_OVERRIDES`): the CDK app deploys, and ``sleeper deploy`` plans, the properties so changed."""
        for key, prop in PROPERTY_OVERRIDES.items():
            value = self.get(key)
            if value:
                properties.set(prop, value)


def is_cdk_key(key: str) -> bool:
    """Whether a context key belongs to the CDK (feature flags, lookups, the CLI's own settings)."""
    return key.startswith("@") or ":" in key or key in CDK_OWN_KEYS


def read_context(context: Mapping[str, object]) -> DeployOptions:
    """Reads the app's context, resolving older names.

    Raises:
        DeployContextError: Naming an unknown key, a value given under two names, a true/false key with another
            value, or both ``propertiesFile`` and ``configurationDir``.
    """
    values: dict[str, str] = {}
    given_as: dict[str, str] = {}
    for key, raw in context.items():
        if is_cdk_key(key):
            continue
        name = ALIASES.get(key, key)
        if name not in CONTEXT_KEYS:
            raise DeployContextError(
                f"unknown CDK context variable {key!r}: use one of " + ", ".join(CONTEXT_KEYS) + " (-c name=value)"
            )
        text = _text(raw)
        if name in values and values[name] != text:
            raise DeployContextError(f"context variables {given_as[name]!r} and {key!r} both set {name}: give one")
        if name in BOOLEAN_KEYS and text and text.lower() not in ("true", "false"):
            raise DeployContextError(f"context variable {key!r} must be true or false, not {text!r}")
        values[name] = text
        given_as[name] = key
    options = DeployOptions(values=values)
    if options.get(PROPERTIES_FILE) and options.get(CONFIGURATION_DIR):
        raise DeployContextError(
            f"both {given_as[PROPERTIES_FILE]!r} and {CONFIGURATION_DIR!r} are set: give exactly one"
        )
    return options


def _text(raw: object) -> str:
    if raw is None:
        return ""
    if isinstance(raw, bool):
        return "true" if raw else "false"
    if isinstance(raw, Mapping):
        return ",".join(f"{k},{v}" for k, v in raw.items())
    if isinstance(raw, (list, tuple)):
        return ",".join(str(item) for item in raw)
    return str(raw)
