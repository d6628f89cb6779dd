"""One entry point to an instance wherever it lives: :func:`connect` opens a local instance directory or an instance
on AWS (``aws:ID``); :func:`create_instance` creates a local one. Both return the instance's front door
(:class:`sleeper.api.instance.Instance`, the same verbs on both runtimes), whose ``table(name)``, ``tables()`` and
``create_table(...)`` give the one table facade (``sleeper.api.table.Table``). The ``sleeper`` command opens its
``--instance`` through :func:`connect` too.

An instance on AWS is found as Sleeper's client finds it: its config bucket ``sleeper-<id>-config-<account>``, with
the region, credentials and any ``AWS_ENDPOINT_URL`` (an emulated instance) from the usual AWS configuration. It is
deployed with the CDK stacks, never created from here.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from sleeper.api import AWS_PREFIX, Instance, LocalOnlyError
from sleeper.core import InstanceNotFoundError, SleeperError

if TYPE_CHECKING:
    from sleeper.runtime.aws.api import AwsApi

__all__ = ["connect", "create_instance"]


def connect(location: str | Path, *, create: bool = False) -> Instance:
    """Opens an instance: a local instance directory, or ``aws:<instance id>`` for an instance on AWS.

    It never creates one unless asked: a mistyped directory is an error naming it, not a new empty instance.

    Args:
        location: The instance directory, or ``aws:<instance id>``.
        create: Create a local instance in the directory if it holds none (an AWS instance is deployed, not
            created here).

    Returns:
        The instance's front door.

    Raises:
        InstanceNotFoundError: If the directory holds no instance (and ``create`` is False), or no instance on AWS
            has the id (its config bucket holds no ``instance.properties``).
        SleeperError: If ``aws:`` has no id, or ``create`` is asked of an instance on AWS.
        AwsRuntimeConfigError: If no AWS region is configured.
    """
    text = str(location)
    if text.startswith(AWS_PREFIX):
        if create:
            raise SleeperError(
                f"cannot create {text} from Python: an instance on AWS is deployed with the CDK stacks "
                "(or emulated with 'sleeper aws-local'); connect to it once deployed"
            )
        return _connect_aws(text.removeprefix(AWS_PREFIX))
    from sleeper.runtime.local.api import LocalApi
    from sleeper.runtime.local.instance import LocalInstance

    directory = Path(location)
    if create and not (directory / "instance.properties").exists():
        return LocalApi(LocalInstance.create(directory))
    if not (directory / "instance.properties").exists():
        raise InstanceNotFoundError(
            f"no Sleeper instance in {directory.resolve()}; create one with sleeper.create_instance({text!r}) or "
            f"'sleeper --instance {text} instance create'"
        )
    return LocalApi(LocalInstance(directory))


def create_instance(directory: str | Path, *, instance_id: str | None = None) -> Instance:
    """Creates a local instance in a directory (which may exist, but must hold no instance).

    Args:
        directory: The directory.
        instance_id: The instance id (``local-<random>`` if None).

    Raises:
        InstanceAlreadyExistsError: If the directory already holds an instance.
        SleeperError: If ``aws:ID`` is given (an instance on AWS is deployed, not created here), or the path is a
            file.
    """
    from sleeper.runtime.local.api import LocalApi

    if str(directory).startswith(AWS_PREFIX):
        raise LocalOnlyError(
            f"creating an instance works only on a local instance directory, not on an instance on AWS ({directory}): "
            "an instance on AWS is deployed with the CDK stacks ('sleeper deploy'), or emulated with "
            "'sleeper aws-local'"
        )
    if Path(directory).exists() and not Path(directory).is_dir():
        raise SleeperError(f"cannot create an instance in {directory}: it is a file, not a directory")
    from sleeper.runtime.local.instance import LocalInstance

    return LocalApi(LocalInstance.create(directory, instance_id=instance_id))


def _connect_aws(instance_id: str) -> AwsApi:

    try:
        from sleeper.adapters.aws import AwsResourceNotFoundError
        from sleeper.runtime.aws.api import AwsApi
        from sleeper.runtime.aws.instance import AwsInstance, AwsRuntimeConfig
    except ImportError as e:
        from sleeper.core import missing_extra

        raise (missing_extra(e, f"an instance on AWS ({AWS_PREFIX}{instance_id})", "aws") or e) from None

    if not instance_id:
        raise SleeperError("aws: needs an instance id, for example sleeper.connect('aws:my-instance')")
    instance = AwsInstance(AwsRuntimeConfig.for_instance_id(instance_id), table_cache_seconds=0)
    try:
        instance.properties  # noqa: B018 - read now, so a wrong id fails here rather than at first use
    except AwsResourceNotFoundError as e:
        raise InstanceNotFoundError(f"no Sleeper instance {AWS_PREFIX}{instance_id}: {e}") from None
    return AwsApi(instance)
