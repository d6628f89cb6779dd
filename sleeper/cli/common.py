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
    from sleeper.runtime.local import LocalInstance

console = Console()
err_console = Console(stderr=True)

JsonOption = Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")]


class _Context:
    instance_dir: str | None = None


context = _Context()


def instance_dir() -> str:
    """The instance directory given with ``--instance`` or ``SLEEPER_INSTANCE``.

    Raises:
        SleeperError: If none was given.
    """
    if not context.instance_dir:
        raise SleeperError("no instance given: pass --instance DIR or set SLEEPER_INSTANCE")
    return context.instance_dir


def open_instance() -> LocalInstance:
    """The chosen local instance."""
    from sleeper.runtime.local import LocalInstance

    return LocalInstance(instance_dir())


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
