"""Where to reach AWS, and builders for the boto3 clients the adapters take: one function per service, each making a
new client (an instance's runtime shares one of each: :class:`~sleeper.adapters.aws.instance_clients.AwsClients`).

Setting ``endpoint_url`` to an emulator (a moto server, LocalStack) switches every client to it with no other change.

:meth:`AwsSettings.from_environment` reads the settings the way boto3 and the AWS CLI do: the region from
``AWS_REGION`` or ``AWS_DEFAULT_REGION``, else from the profile (``AWS_PROFILE``, else ``default``) in the shared
config file (``AWS_CONFIG_FILE``, else ``~/.aws/config``); the endpoint from ``AWS_ENDPOINT_URL``, else the profile's
``endpoint_url``. Credentials are left to boto3's chain (environment keys, the profile's keys, ``credential_process``,
SSO, assumed roles, container and instance roles), so every client sees what the AWS CLI would.
No mypy stubs are installed for ECS, EMR, EMR Serverless, EventBridge, STS, DynamoDB Streams or EC2, so their clients
are typed ``Any``.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping
from dataclasses import KW_ONLY, dataclass, field
from typing import TYPE_CHECKING, Any

import boto3.session
import botocore.loaders
import botocore.session
from botocore.config import Config
from botocore.exceptions import BotoCoreError

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_s3 import S3Client
    from mypy_boto3_sqs import SQSClient

EcsClient = Any
"""A boto3 ECS client."""
EmrClient = Any
"""A boto3 EMR client."""
EmrServerlessClient = Any
"""A boto3 EMR Serverless client."""

REGION_ENVS = ("AWS_REGION", "AWS_DEFAULT_REGION")
"""The variables naming the region, in the order they are read (``AWS_REGION`` is what Lambda and most AWS SDKs
read; botocore reads ``AWS_DEFAULT_REGION``)."""
PROFILE_ENVS = ("AWS_DEFAULT_PROFILE", "AWS_PROFILE")
"""The variables naming the profile, in botocore's order."""
ENDPOINT_ENV = "AWS_ENDPOINT_URL"
"""An endpoint for every AWS service (an emulator)."""
CONFIG_FILE_ENV = "AWS_CONFIG_FILE"
"""The shared config file, ``~/.aws/config`` when unset."""
CREDENTIALS_FILE_ENV = "AWS_SHARED_CREDENTIALS_FILE"
"""The shared credentials file, ``~/.aws/credentials`` when unset (its profiles count as profiles, as in botocore)."""
_IGNORE_ENDPOINTS_ENV = "AWS_IGNORE_CONFIGURED_ENDPOINT_URLS"
_DEFAULT_CONFIG_FILE = "~/.aws/config"
_DEFAULT_CREDENTIALS_FILE = "~/.aws/credentials"
_REGION_EXAMPLE = "eu-west-2"


class AwsConfigurationError(ValueError):
    """The AWS configuration names no region, a profile that does not exist, or a file that cannot be read."""


def _named_profile(env: Mapping[str, str]) -> tuple[str, str] | None:
    """The profile the environment names and the variable naming it, or None (the ``default`` profile)."""
    return next(((env[name], name) for name in PROFILE_ENVS if env.get(name)), None)


def _profiles(env: Mapping[str, str]) -> tuple[dict[str, Any], str]:
    """Every profile of the shared config and credentials files the environment names, as botocore reads them, and
    the config file's path; missing files hold no profiles."""
    config_file = env.get(CONFIG_FILE_ENV) or _DEFAULT_CONFIG_FILE
    session = botocore.session.Session()
    session.set_config_variable("config_file", config_file)
    session.set_config_variable("credentials_file", env.get(CREDENTIALS_FILE_ENV) or _DEFAULT_CREDENTIALS_FILE)
    try:
        profiles: dict[str, Any] = session.full_config.get("profiles", {})
    except BotoCoreError as e:  # a file that is there but is not an INI file
        raise AwsConfigurationError(f"cannot read the AWS shared configuration: {e}; fix or move the file") from None
    return profiles, config_file


def _is_true(value: object) -> bool:
    return str(value).strip().lower() == "true"


@dataclass(frozen=True, slots=True)
class AwsSettings:
    """How to reach AWS.

    Attributes:
        region: The AWS region, e.g. ``"eu-west-2"``.
        endpoint_url: An endpoint for every service (an emulator), or None for the real AWS endpoints.
        profile: A profile of the shared configuration to take credentials from, named explicitly as boto3's
            ``profile_name`` names it (its credentials then win over ``AWS_ACCESS_KEY_ID``); None leaves boto3 to
            choose as usual (``AWS_PROFILE``, else ``default``). pyarrow's S3 client always takes the process's chain.
        access_key_id: Explicit credentials (an emulator needs any non-empty pair); None uses boto3's usual chain.
        secret_access_key: The secret of ``access_key_id`` (left out of the repr, so it reaches no log).
        max_attempts: Attempts per call, including the client's own retries of throttling and transient errors.
    """

    region: str
    endpoint_url: str | None = None
    _: KW_ONLY
    profile: str | None = None
    access_key_id: str | None = None
    secret_access_key: str | None = field(default=None, repr=False)
    max_attempts: int = 5

    def __post_init__(self) -> None:
        if (self.access_key_id is None) != (self.secret_access_key is None):
            raise ValueError("give both access_key_id and secret_access_key, or neither")
        if self.max_attempts < 1:
            raise ValueError("max_attempts must be at least 1")

    @classmethod
    def from_environment(
        cls, environ: Mapping[str, str], *, process_environ: Mapping[str, str] | None = None
    ) -> AwsSettings:
        """The settings the usual AWS configuration gives, read as boto3 reads it (see the module docs).

        The region is ``AWS_REGION``, else ``AWS_DEFAULT_REGION``, else the ``region`` of the profile
        (``AWS_DEFAULT_PROFILE`` or ``AWS_PROFILE``, else ``default``) in the shared config file (``AWS_CONFIG_FILE``,
        else ``~/.aws/config``). The endpoint is ``AWS_ENDPOINT_URL``, else the profile's ``endpoint_url``; neither when
        ``AWS_IGNORE_CONFIGURED_ENDPOINT_URLS`` (or the profile's ``ignore_configured_endpoint_urls``) is true.

        Args:
            environ: The environment to read (the runtime passes the process's: adapters never read it themselves).
            process_environ: The process's environment, when ``environ`` is another: naming another profile than it
                records that profile in :attr:`profile`, so the clients use the profile the region came from.

        Returns:
            The settings; credentials are left to boto3's chain.

        Raises:
            AwsConfigurationError: If no region is found, a profile is named that neither shared file holds, or a
                shared file cannot be read.
        """
        env = environ
        named = _named_profile(env)
        profiles, config_file = _profiles(env)
        if named is not None and named[0] not in profiles:
            name, variable = named
            known = ", ".join(sorted(profiles)) or "none"
            missing = "" if os.path.exists(os.path.expanduser(config_file)) else ", which does not exist,"
            raise AwsConfigurationError(
                f"the AWS profile {name!r} named by {variable} is not in the shared config file {config_file}{missing} "
                f"or the shared credentials file (profiles there: {known}); fix {variable} (or {CONFIG_FILE_ENV}), "
                f"or add the profile with 'aws configure --profile {name}'"
            )
        profile = profiles.get(named[0] if named else "default", {})
        region = next((env[name] for name in REGION_ENVS if env.get(name)), None) or profile.get("region") or None
        if region is None:
            raise AwsConfigurationError(_no_region_message(named, config_file))
        ignore_endpoints = _is_true(env.get(_IGNORE_ENDPOINTS_ENV) or profile.get("ignore_configured_endpoint_urls"))
        endpoint = None if ignore_endpoints else env.get(ENDPOINT_ENV) or profile.get("endpoint_url") or None
        process_profile = _named_profile(env if process_environ is None else process_environ)
        explicit = named[0] if named is not None and named[0] != (process_profile or ("", ""))[0] else None
        return cls(str(region), None if endpoint is None else str(endpoint), profile=explicit)

    def _config(self, *, path_style: bool = False) -> Config:
        config = Config(region_name=self.region, retries={"mode": "standard", "max_attempts": self.max_attempts})
        if path_style:
            # Emulators serve buckets by path; virtual-host addressing would need DNS for <bucket>.<endpoint host>.
            config = config.merge(Config(s3={"addressing_style": "path"}))
        return config

    def _session(self) -> boto3.session.Session:
        # A session of our own per client: boto3's default session is not safe to share between threads. Its service
        # models come from the process's loader (_shared_loader): a session's own would read them from disk again.
        core = botocore.session.Session()
        loader = _shared_loader(core.get_config_variable("data_path"))
        core.register_component("data_loader", loader)
        with _LOADERS_LOCK:
            session = boto3.session.Session(
                botocore_session=core,
                aws_access_key_id=self.access_key_id,
                aws_secret_access_key=self.secret_access_key,
                region_name=self.region,
                profile_name=self.profile,
            )
            # boto3 adds its own data directory to the loader of every session it is given
            loader.search_paths[:] = list(dict.fromkeys(loader.search_paths))
        return session


_LOADERS: dict[str | None, botocore.loaders.Loader] = {}
"""The process's botocore loaders, by data path (``AWS_DATA_PATH``): each caches the service models it read."""
_LOADERS_LOCK = threading.Lock()


def _shared_loader(data_path: str | None) -> botocore.loaders.Loader:
    """The process's loader of service models and endpoint data for ``data_path``, made on first use.

    Every client gets a session of its own (:meth:`AwsSettings._session`), and a session's own loader reads each
    service's model, several megabytes of JSON, from disk on its first client (about 0.1 s a model). Sessions sharing
    a loader read each model once per process; a loader is safe to share, as every client of one session shares
    it."""
    with _LOADERS_LOCK:
        loader = _LOADERS.get(data_path)
        if loader is None:
            loader = _LOADERS[data_path] = botocore.loaders.create_loader(data_path)
        return loader


def _no_region_message(named: tuple[str, str] | None, config_file: str) -> str:
    where = f"the profile {named[0]!r} (from {named[1]})" if named else "the default profile"
    option = f" --profile {named[0]}" if named else ""
    return (
        f"no AWS region is configured: {' and '.join(REGION_ENVS)} are not set and {where} in the shared config file "
        f"{config_file} has no region. Set {REGION_ENVS[0]} (or {REGION_ENVS[1]}), or the profile's region "
        f"('aws configure set region {_REGION_EXAMPLE}{option}', which writes {CONFIG_FILE_ENV} or "
        f"{_DEFAULT_CONFIG_FILE}), or name a profile that has one in {PROFILE_ENVS[1]}"
    )


def dynamodb_client(settings: AwsSettings) -> DynamoDBClient:
    """A DynamoDB client for the settings.

    Args:
        settings: Where to reach AWS.

    Returns:
        A new client; boto3 clients are safe to share between threads.
    """
    return settings._session().client("dynamodb", endpoint_url=settings.endpoint_url, config=settings._config())


def s3_client(settings: AwsSettings) -> S3Client:
    """An S3 client for the settings; path-style addressing when an emulator endpoint is set.

    Args:
        settings: Where to reach AWS.

    Returns:
        A new client; boto3 clients are safe to share between threads.
    """
    return settings._session().client(
        "s3",
        endpoint_url=settings.endpoint_url,
        config=settings._config(path_style=settings.endpoint_url is not None),
    )


def sqs_client(settings: AwsSettings) -> SQSClient:
    """An SQS client for the settings.

    Args:
        settings: Where to reach AWS.

    Returns:
        A new client; boto3 clients are safe to share between threads.
    """
    return settings._session().client("sqs", endpoint_url=settings.endpoint_url, config=settings._config())


def _untyped_client(settings: AwsSettings, service: str) -> Any:
    """A new client of a service without mypy stubs installed."""
    client: Any = settings._session().client(
        service,  # type: ignore[call-overload]
        endpoint_url=settings.endpoint_url,
        config=settings._config(),
    )
    return client


def ecs_client(settings: AwsSettings) -> EcsClient:
    """An ECS client for the settings."""
    return _untyped_client(settings, "ecs")


def emr_client(settings: AwsSettings) -> EmrClient:
    """An EMR client for the settings."""
    return _untyped_client(settings, "emr")


def emr_serverless_client(settings: AwsSettings) -> EmrServerlessClient:
    """An EMR Serverless client for the settings."""
    return _untyped_client(settings, "emr-serverless")


def events_client(settings: AwsSettings) -> Any:
    """An EventBridge client for the settings."""
    return _untyped_client(settings, "events")


def sts_client(settings: AwsSettings) -> Any:
    """An STS client for the settings."""
    return _untyped_client(settings, "sts")


def streams_client(settings: AwsSettings) -> Any:
    """A DynamoDB Streams client for the settings."""
    return _untyped_client(settings, "dynamodbstreams")


def ec2_client(settings: AwsSettings) -> Any:
    """An EC2 client for the settings (the emulator makes a network for tasks with it)."""
    return _untyped_client(settings, "ec2")


def stepfunctions_client(settings: AwsSettings) -> Any:
    """A Step Functions client for the settings (bulk import on EKS starts executions with it)."""
    return _untyped_client(settings, "stepfunctions")
