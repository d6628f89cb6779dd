"""How :class:`~sleeper.client.SleeperClient` finds its instance, as Sleeper's Python client does: from the instance
id and the account (given, else the caller's from STS) it derives the config bucket
``sleeper-<id>-config-<account>`` and loads ``instance.properties`` from it. The region and endpoint come from the
usual AWS configuration, read as boto3 reads it: ``AWS_REGION`` or ``AWS_DEFAULT_REGION``, else the region of a given
client, else the profile (``AWS_PROFILE``, else ``default``) in the shared config file (``AWS_CONFIG_FILE``, else
``~/.aws/config``); ``AWS_ENDPOINT_URL`` (or the profile's ``endpoint_url``) for an emulated instance. Credentials come
from boto3's usual chain (keys, the profile, ``credential_process``, SSO, roles), through
:meth:`AwsRuntimeConfig.for_instance_id <sleeper.runtime.aws.instance.AwsRuntimeConfig.for_instance_id>`.

boto3 clients or resources given to the client (Sleeper's ``s3_client``, ``s3_resource``, ``sqs_resource``) replace
the instance's own: every call the instance makes to that service goes through them. For ``dynamo_resource`` a client
is made on its region and endpoint (with boto3's usual credentials), as its own client translates values for the
resource.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from sleeper.adapters.aws import AwsClients, AwsResourceNotFoundError, AwsSettings, dynamodb_client
from sleeper.client.errors import ClientArgumentError, InstanceNotFoundError
from sleeper.runtime.aws import ACCOUNT_ENV, AwsInstance, AwsRuntimeConfig

__all__ = ["GivenClients", "dynamodb_client_like", "low_level_client", "open_instance"]

_REGION_ENV = "AWS_REGION"
_DEFAULT_REGION_ENV = "AWS_DEFAULT_REGION"


def low_level_client(given: Any) -> Any:
    """The boto3 client of a boto3 resource (``resource.meta.client``), or the client itself."""
    meta = getattr(given, "meta", None)
    client = getattr(meta, "client", None)
    return client if client is not None else given


def dynamodb_client_like(resource: Any) -> Any:
    """A DynamoDB client on the region and endpoint of a boto3 DynamoDB resource, with boto3's usual credentials.

    The resource's own client cannot serve: boto3 makes it translate Python values to DynamoDB's typed form, which
    the adapters already write.
    """
    client = low_level_client(resource)
    meta = getattr(client, "meta", None)
    region = getattr(meta, "region_name", None)
    endpoint = getattr(meta, "endpoint_url", None)
    if not isinstance(region, str) or not region:
        raise ClientArgumentError("dynamo_resource must be a boto3 DynamoDB resource with a region")
    return dynamodb_client(AwsSettings(region, endpoint if isinstance(endpoint, str) else None))


class GivenClients(AwsClients):
    """An instance's clients where some were given: those replace the ones built from the settings.

    Args:
        settings: How to reach AWS for the clients not given.
        s3: The S3 client to use, if given.
        sqs: The SQS client to use, if given.
        dynamodb: The DynamoDB client to use, if given.
    """

    def __init__(self, settings: AwsSettings, *, s3: Any = None, sqs: Any = None, dynamodb: Any = None) -> None:
        super().__init__(settings)
        for name, client in (("s3", s3), ("sqs", sqs), ("dynamodb", dynamodb)):
            if client is not None:
                self.__dict__[name] = client  # a cached_property reads the instance's dict first


def _region_hint(*given: Any) -> str | None:
    for client in given:
        region = getattr(getattr(client, "meta", None), "region_name", None)
        if isinstance(region, str) and region:
            return region
    return None


def open_instance(
    instance_id: str,
    *,
    account_name: str | None = None,
    s3: Any = None,
    sqs: Any = None,
    dynamodb: Any = None,
    environ: Mapping[str, str] | None = None,
) -> AwsInstance:
    """The instance with this id, its properties loaded.

    Args:
        instance_id: The instance id.
        account_name: The AWS account holding it (default: ``SLEEPER_ACCOUNT``, else the caller's, from STS).
        s3: The boto3 S3 client to use for it (default: one built from the environment).
        sqs: The boto3 SQS client to use for it.
        dynamodb: The boto3 DynamoDB client to use for it.
        environ: The environment (default: the process's).

    Raises:
        ClientArgumentError: If the instance id is not a non-empty string.
        InstanceNotFoundError: If the config bucket or its ``instance.properties`` does not exist.
        AwsRuntimeConfigError: If no region is configured anywhere (nor has any given client one), or the profile
            named does not exist.
        AwsError: If AWS refuses or cannot be reached.
    """
    if not isinstance(instance_id, str) or not instance_id:
        raise ClientArgumentError(f"instance_id must be a non-empty string, got {instance_id!r}")
    env = dict(os.environ if environ is None else environ)
    if account_name is not None:
        if not isinstance(account_name, str) or not account_name:
            raise ClientArgumentError(f"account_name must be a non-empty string, got {account_name!r}")
        env[ACCOUNT_ENV] = account_name
    region = _region_hint(s3, sqs, dynamodb)
    if region is not None and not env.get(_REGION_ENV) and not env.get(_DEFAULT_REGION_ENV):
        env[_REGION_ENV] = region  # a given client's region wins over the shared config's, as it names the instance
    config = AwsRuntimeConfig.for_instance_id(instance_id, env)
    instance = AwsInstance(config)
    if s3 is not None or sqs is not None or dynamodb is not None:
        instance.clients = GivenClients(config.settings, s3=s3, sqs=sqs, dynamodb=dynamodb)
    try:
        instance.properties  # noqa: B018 - loaded now, as Sleeper's client loads them when it is made
    except AwsResourceNotFoundError as e:
        raise InstanceNotFoundError(
            f"no Sleeper instance {instance_id!r} in region {config.settings.region}: cannot read "
            f"s3://{config.config_bucket}/instance.properties ({e.code}); check the instance id, the account and the "
            "region"
        ) from e
    return instance
