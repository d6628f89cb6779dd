"""What every command of the ``sleeper`` CLI shares: consoles, the chosen instance, JSON output, argument parsing."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import IO, TYPE_CHECKING, Annotated, Any, Literal

import typer
from rich.console import Console, ConsoleDimensions

from sleeper.core import KeyValue, Schema, SleeperError

if TYPE_CHECKING:
    from rich.console import RenderableType

    from sleeper.api import Instance

DISPLAY_ROWS = 20
"""Rows the ``query`` table format shows when no ``--limit`` is given (the count printed is of every row)."""

DEFAULT_INGEST_WAIT_SECONDS = 900.0
"""``ingest --wait``'s default timeout: :data:`sleeper.api.table.DEFAULT_WAIT_SECONDS`, repeated here so that the
command line's help is built without importing the table API (a unit test checks the two agree)."""

_PIPE_WIDTH = 1_000_000
"""The width a console has when its output is not a terminal: wide enough that nothing is cut or wrapped."""


class PipeConsole(Console):
    """A rich console that never cuts or wraps what it prints when its output is not a terminal.

    On a terminal it is rich's console (the terminal's width, colour). Written to a pipe or a file, rich would assume
    80 columns and squeeze tables into them, dropping columns and cutting cells with an ellipsis; here each thing
    printed is given the width it needs instead (its widest line), so every column and every character is kept and
    ``grep``, ``cut`` or ``less`` see what a wide terminal would show. Only a width given in code bounds it then: a
    ``COLUMNS`` in the environment describes a terminal, not the pipe.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._given_width = kwargs.get("width") is not None

    @property
    def size(self) -> ConsoleDimensions:
        size = super().size
        if self.is_terminal or self._given_width:
            return size
        return ConsoleDimensions(_PIPE_WIDTH, size.height)

    @size.setter
    def size(self, new_size: tuple[int, int]) -> None:
        Console.size.fset(self, new_size)  # type: ignore[attr-defined]

    def print(self, *objects: Any, **kwargs: Any) -> None:  # noqa: D102 (rich's print)
        if objects and kwargs.get("width") is None and not self.is_terminal:
            from rich.measure import Measurement

            options = self.options
            widths = [
                Measurement.get(
                    self,
                    options,
                    self.render_str(thing, markup=kwargs.get("markup")) if isinstance(thing, str) else thing,
                ).maximum
                for thing in objects
            ]
            if all(isinstance(thing, str) for thing in objects):  # joined into one line, with sep between
                needed = sum(widths) + len(kwargs.get("sep", " ")) * (len(objects) - 1)
            else:
                needed = max(widths)
            kwargs["width"] = max(needed, 1)  # rich keeps it within the console's width, when one was set
        super().print(*objects, **kwargs)


console = PipeConsole()
err_console = PipeConsole(stderr=True)

JsonOption = Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")]

OutputFormat = Literal["table", "json", "tsv"]
FormatOption = Annotated[
    OutputFormat | None,
    typer.Option(
        "--format",
        help="table (for people; never cut or wrapped when piped), json, or tsv (tab-separated, a header line first).",
    ),
]
"""``--format table|json|tsv`` of every report (``--json`` is the same as ``--format json``)."""
RowsFormatOption = Annotated[
    str,
    typer.Option("--format", help="table (the first rows and the count), json, ndjson (a row a line), csv or parquet."),
]
"""``--format`` of a command that writes rows (``query``, ``sql``)."""
RowsOutputOption = Annotated[
    Path | None, typer.Option("--output", "-o", help="Write the rows to this file (- for standard output).")
]
"""``--output`` of a command that writes rows: standard output if not given."""
ChangeJsonOption = Annotated[bool, typer.Option("--json", help="Print what changed, with its ids, as JSON.")]
"""``--json`` of a command that creates or changes something: it prints the ids of what it made or changed."""


def version_line() -> str:
    """``sleeper-lsm 0.1.0``: the distribution installed and its version.

    Raises:
        SleeperError: If the distribution is not installed (the package imported from a source tree).
    """
    from importlib.metadata import PackageNotFoundError, version

    from sleeper.core import DISTRIBUTION

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
    stdin_read_by: str | None = None


context = _Context()


def choose_instance(instance: str | None) -> None:
    """Sets the instance ``--instance`` names for this command (forgetting any instance opened before)."""
    context.instance_dir = instance
    context.admin = None
    context.stdin_read_by = None


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
    from sleeper.api import AWS_PREFIX

    return bool(context.instance_dir) and str(context.instance_dir).startswith(AWS_PREFIX)


def open_instance() -> Instance:
    """The chosen instance's front door (:func:`sleeper.runtime.connection.connect`): a local instance directory, or
    ``aws:ID`` for an instance on AWS (found through its config bucket, with the region, credentials and any
    endpoint from the usual AWS configuration: the variables, else the profile in the shared config file, as the AWS
    CLI reads them). Opened once per command.

    Raises:
        SleeperError: If no instance was given, or ``aws:`` has no id.
        InstanceNotFoundError: If there is no instance there.
    """
    location = instance_location()
    if context.admin is not None and context.admin[0] == location:
        return context.admin[1]
    from sleeper.runtime import connect

    instance = connect(location)
    context.admin = (location, instance)
    return instance


STDIN = "-"
"""The file name that stands for standard input (or, for an output, standard output), as in most Unix tools."""


def is_stdin(path: object) -> bool:
    """Whether a file argument is ``-``: standard input (or output)."""
    return path is not None and str(path) == STDIN


def _take_stdin(option: str) -> None:
    if context.stdin_read_by is not None:
        raise SleeperError(
            f"standard input can be read once: {context.stdin_read_by} - already reads it, so {option} cannot be - too"
        )
    context.stdin_read_by = option
    if sys.stdin.isatty():  # typed by hand: say what is awaited, or the command seems to hang
        err_console.print(f"reading {option} from standard input; end it with Ctrl-D", markup=False, highlight=False)


def read_stdin_text(option: str) -> str:
    """Standard input as text, for the option given ``-`` (once per command).

    Raises:
        SleeperError: If another option of the command already read standard input.
    """
    _take_stdin(option)
    return sys.stdin.read()


def read_stdin_bytes(option: str) -> bytes:
    """Standard input as bytes, for the option given ``-`` (once per command).

    Raises:
        SleeperError: If another option of the command already read standard input.
    """
    _take_stdin(option)
    return sys.stdin.buffer.read()


def refuse_stdin(values: Iterable[object], option: str, reason: str) -> None:
    """Refuses ``-`` where standard input cannot stand for a file.

    Raises:
        SleeperError: Naming the option and why, if one of the values is ``-``.
    """
    if any(is_stdin(v) for v in values):
        raise SleeperError(f"{option} cannot be - (standard input): {reason}")


def print_json(data: object) -> None:
    """Prints data as indented JSON on stdout."""
    sys.stdout.write(json.dumps(data, indent=2, default=str) + "\n")


@contextmanager
def progress(description: str) -> Iterator[Callable[[str], None]]:
    """Shows that long work is under way: on standard error, a spinner with the description and the seconds elapsed,
    while the block runs, cleared when it ends; nothing at all when standard error is not a terminal (a pipe, a file,
    a CI log), so output that is kept holds only what the command printed.

    Yields a function that replaces the description (``update("waiting for job j1")``).
    """
    if not err_console.is_terminal:
        yield lambda _text: None
        return
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    with Progress(
        SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn(), console=err_console, transient=True
    ) as shown:
        task = shown.add_task(description, total=None)
        yield lambda text: shown.update(task, description=text)


def chosen_format(output_format: str | None, as_json: bool) -> OutputFormat:
    """The format a report prints in, from ``--format`` and ``--json``.

    Raises:
        SleeperError: If both are given and disagree.
    """
    if as_json and output_format not in (None, "json"):
        raise SleeperError(f"--json and --format {output_format} disagree: give one of them")
    if as_json or output_format == "json":
        return "json"
    return "tsv" if output_format == "tsv" else "table"


def _tsv_field(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (dict, list, tuple)):
        value = json.dumps(value, default=str, separators=(",", ":"))
    elif hasattr(value, "isoformat"):
        value = value.isoformat()
    text = str(value)
    return text.replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n").replace("\r", "\\r")


def write_tsv(
    rows: Iterable[Mapping[str, Any]], out: IO[str] | None = None, *, columns: list[str] | None = None
) -> None:
    """Rows as tab-separated values: a header line of the columns (every key, in the order first seen, unless given),
    then one line per row. Nothing is cut: a tab, line break or backslash in a value is written ``\\t``, ``\\n``,
    ``\\\\``; a list or mapping as compact JSON; a missing value or None as an empty field."""
    out = out or sys.stdout
    rows = list(rows)
    if columns is None:
        columns = []
        for row in rows:
            columns.extend(k for k in row if k not in columns)
    out.write("\t".join(_tsv_field(c) for c in columns) + "\n")
    for row in rows:
        out.write("\t".join(_tsv_field(row.get(c)) for c in columns) + "\n")


def print_report(
    output_format: OutputFormat,
    data: object,
    renderable: Callable[[], RenderableType],
    tsv_rows: Callable[[], Iterable[Mapping[str, Any]] | Mapping[str, Iterable[Mapping[str, Any]]]] | None = None,
) -> None:
    """Prints a report in the chosen format: ``data`` as JSON, the rich renderable for people, or TSV.

    TSV is ``tsv_rows()`` (default: ``data`` itself, a list of flat mappings): one table of rows, or sections (a mapping
    of name to rows), each written as a ``# name`` line, its header and rows, with a blank line between sections.
    """
    if output_format == "json":
        print_json(data)
    elif output_format == "tsv":
        rows = tsv_rows() if tsv_rows is not None else data
        if isinstance(rows, Mapping):
            for index, (name, section) in enumerate(rows.items()):
                if index:
                    sys.stdout.write("\n")
                sys.stdout.write(f"# {name}\n")
                write_tsv(section)
        else:
            write_tsv(rows)  # type: ignore[arg-type]
    else:
        console.print(renderable())


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
    (and sort keys) named (:meth:`Schema.from_arrow`). Either file may be ``-``, standard input.

    Raises:
        SleeperError: If neither or both sources are given, keys are named without a Parquet file, a file cannot be
            read, or the schema is invalid.
    """
    if (schema_file is None) == (parquet_file is None):
        raise SleeperError("give the schema with either --schema FILE or --from-parquet FILE --row-key COLUMN")
    if schema_file is not None:
        if row_keys or sort_keys:
            raise SleeperError("--row-key and --sort-key go with --from-parquet; a --schema file names its own keys")
        if is_stdin(schema_file):
            text = read_stdin_text("--schema")
        else:
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

    source: Any = parquet_file
    if is_stdin(parquet_file):
        source = pa.BufferReader(read_stdin_bytes("--from-parquet"))
    elif not parquet_file.is_file():
        raise SleeperError(f"cannot read {parquet_file}: no such file (give one Parquet file to --from-parquet)")
    try:
        arrow = pq.read_schema(source)
    except (OSError, pa.ArrowException) as e:
        where = "standard input" if is_stdin(parquet_file) else parquet_file
        raise SleeperError(f"cannot read the schema of {where}: {' '.join(str(e).split())}") from None
    return Schema.from_arrow(arrow, row_keys=row_keys, sort_keys=sort_keys)


def read_split_points_file(path: Path, schema: Schema, *, base64: bool = False) -> list[KeyValue]:
    """Split points from a file (standard input if it is ``-``), one per line, typed by the schema's first row key.

    Raises:
        SleeperError: If the file cannot be read or a split point is invalid.
    """
    from sleeper.core import read_split_points

    if is_stdin(path):
        lines = read_stdin_text("--split-points").splitlines()
    else:
        try:
            lines = path.read_text(encoding="utf-8").splitlines()
        except OSError as e:
            raise SleeperError(f"cannot read split points file {path}: {e.strerror}") from None
    return list(read_split_points(schema, lines, strings_base64=base64))
