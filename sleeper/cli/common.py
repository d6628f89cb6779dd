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
    from sleeper.api.instance import Instance

DISPLAY_ROWS = 20
"""Rows the ``query`` table format shows when no ``--limit`` is given (the count printed is of every row)."""

DEFAULT_INGEST_WAIT_SECONDS = 900.0
"""``ingest --wait``'s default timeout: :data:`sleeper.api.table.DEFAULT_WAIT_SECONDS`, repeated here so that the
command line's help is built without importing the table API (a unit test checks the two agree)."""

console = Console()
err_console = Console(stderr=True)

JsonOption = Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")]
ChangeJsonOption = Annotated[bool, typer.Option("--json", help="Print what changed, with its ids, as JSON.")]
"""``--json`` of a command that creates or changes something: it prints the ids of what it made or changed."""


def version_line() -> str:
    """``sleeper-lsm 0.1.0``: the distribution installed and its version.

    Raises:
        SleeperError: If the distribution is not installed (the package imported from a source tree).
    """
    from importlib.metadata import PackageNotFoundError, version

    from sleeper.core.extras import DISTRIBUTION

    try:
        return f"{DISTRIBUTION} {version(DISTRIBUTION)}"
    except PackageNotFoundError:
        raise SleeperError(
            f"the {DISTRIBUTION} distribution is not installed (sleeper is imported from a source tree): "
            "install it with pip install -e . in the checkout"
        ) from None


class _Context:
    instance_dir: str | None = None
    admin: tuple[str, Instance] | None = None


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
    from sleeper.api.instance import AWS_PREFIX

    return bool(context.instance_dir) and str(context.instance_dir).startswith(AWS_PREFIX)


def open_instance() -> Instance:
    """The chosen instance's front door (:func:`sleeper.runtime.connect.connect`): a local instance directory, or
    ``aws:ID`` for an instance on AWS (found through its config bucket, with the region, credentials and any
    ``AWS_ENDPOINT_URL`` from the environment). Opened once per command.

    Raises:
        SleeperError: If no instance was given, or ``aws:`` has no id.
        InstanceNotFoundError: If there is no instance there.
    """
    location = instance_location()
    if context.admin is not None and context.admin[0] == location:
        return context.admin[1]
    from sleeper.runtime.connect import connect

    instance = connect(location)
    context.admin = (location, instance)
    return instance


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


def read_table_schema(
    schema_file: Path | None, parquet_file: Path | None, row_keys: list[str], sort_keys: list[str]
) -> Schema:
    """The schema of a new table: from a Sleeper schema JSON file, or from a Parquet file's columns with the row keys
    (and sort keys) named (:meth:`Schema.from_arrow`).

    Raises:
        SleeperError: If neither or both sources are given, keys are named without a Parquet file, a file cannot be
            read, or the schema is invalid.
    """
    if (schema_file is None) == (parquet_file is None):
        raise SleeperError("give the schema with either --schema FILE or --from-parquet FILE --row-key COLUMN")
    if schema_file is not None:
        if row_keys or sort_keys:
            raise SleeperError("--row-key and --sort-key go with --from-parquet; a --schema file names its own keys")
        try:
            text = schema_file.read_text(encoding="utf-8")
        except OSError as e:
            raise SleeperError(f"cannot read schema file {schema_file}: {e.strerror}") from None
        return Schema.from_json(text)
    assert parquet_file is not None
    if not row_keys:
        raise SleeperError("--from-parquet needs at least one --row-key COLUMN (the columns of the row key, in order)")
    import pyarrow as pa
    import pyarrow.parquet as pq

    if not parquet_file.is_file():
        raise SleeperError(f"cannot read {parquet_file}: no such file (give one Parquet file to --from-parquet)")
    try:
        arrow = pq.read_schema(parquet_file)
    except (OSError, pa.ArrowException) as e:
        raise SleeperError(f"cannot read the schema of {parquet_file}: {' '.join(str(e).split())}") from None
    return Schema.from_arrow(arrow, row_keys=row_keys, sort_keys=sort_keys)


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
