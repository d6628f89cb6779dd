"""What every command of the ``sleeper`` CLI shares: consoles, the chosen instance, JSON output, argument parsing."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console

from sleeper.core.exceptions import SleeperError
from sleeper.core.schema import KeyValue, Schema

if TYPE_CHECKING:
    from sleeper.runtime.admin import AdminInstance

console = Console()
err_console = Console(stderr=True)

JsonOption = Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")]


class _Context:
    instance_dir: str | None = None
    admin: tuple[str, AdminInstance] | None = None


context = _Context()


def choose_instance(instance: str | None) -> None:
    """Sets the instance ``--instance`` names for this command (forgetting any instance opened before)."""
    context.instance_dir = instance
    context.admin = None


def instance_location() -> str:
    """The instance given with ``--instance`` or ``SLEEPER_INSTANCE``: a directory, or ``aws:ID``.

    Raises:
        SleeperError: If none was given.
    """
    if not context.instance_dir:
        raise SleeperError("no instance given: pass --instance DIR (or aws:ID) or set SLEEPER_INSTANCE")
    return context.instance_dir


def is_aws_instance() -> bool:
    """Whether the instance given is one on AWS (``aws:ID``)."""
    from sleeper.runtime.admin import AWS_PREFIX

    return bool(context.instance_dir) and str(context.instance_dir).startswith(AWS_PREFIX)


def instance_dir() -> str:
    """The local instance directory given with ``--instance`` or ``SLEEPER_INSTANCE``.

    Raises:
        SleeperError: If none was given.
        LocalOnlyError: If an instance on AWS (``aws:ID``) was given.
    """
    location = instance_location()
    if is_aws_instance():
        from sleeper.runtime.admin import LocalOnlyError

        raise LocalOnlyError(
            f"this command works only on a local instance directory, not on an instance on AWS ({location})"
        )
    return location


def open_instance() -> AdminInstance:
    """The chosen instance: a local instance directory, or ``aws:ID`` for an instance on AWS (found through its
    config bucket, with the region, credentials and any ``AWS_ENDPOINT_URL`` from the environment).

    Raises:
        SleeperError: If no instance was given, or ``aws:`` has no id.
        InstanceNotFoundError: If the directory holds no instance.
    """
    from sleeper.runtime.admin import AWS_PREFIX

    location = instance_location()
    if context.admin is not None and context.admin[0] == location:
        return context.admin[1]
    admin: AdminInstance
    if location.startswith(AWS_PREFIX):
        from sleeper.runtime.aws.admin import AwsAdmin

        instance_id = location.removeprefix(AWS_PREFIX)
        if not instance_id:
            raise SleeperError("aws: needs an instance id, for example --instance aws:my-instance")
        admin = AwsAdmin.for_instance_id(instance_id)
    else:
        from sleeper.runtime.local.admin import LocalAdmin
        from sleeper.runtime.local.instance import LocalInstance

        admin = LocalAdmin(LocalInstance(location))
    context.admin = (location, admin)
    return admin


def print_json(data: object) -> None:
    """Prints data as indented JSON on stdout."""
    sys.stdout.write(json.dumps(data, indent=2, default=str) + "\n")


def parse_assignments(values: list[str] | None, what: str) -> dict[str, str]:
    """``name=value`` arguments as a dict.

    Raises:
        SleeperError: Naming an argument without ``=`` or a name.
    """
    out: dict[str, str] = {}
    for item in values or []:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise SleeperError(f"{what} {item!r} must look like name=value")
        out[key.strip()] = value
    return out


def read_split_points_file(path: Path, schema: Schema, *, base64: bool = False) -> list[KeyValue]:
    """Split points from a file, one per line, typed by the schema's first row key.

    Raises:
        SleeperError: If the file cannot be read or a split point is invalid.
    """
    from sleeper.core.partition import read_split_points

    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as e:
        raise SleeperError(f"cannot read split points file {path}: {e.strerror}") from None
    return list(read_split_points(schema, lines, strings_base64=base64))
