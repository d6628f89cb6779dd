"""Ingest jobs: the message on the ingest job queue.

Wire JSON: ``{"id", "tableName"|"tableId", "files": ["bucket/key", "bucket/dir/", …]}``. A blank or absent id is
replaced by a new one from an injected supplier; a given id must be a safe id (``sleeper.core.paths``), as it
keys the job's tracker records; ``files`` is required, non-empty and holds no nulls; at least one of ``tableName``
and ``tableId`` is given, and the table id wins when both are. Every file path passes the safety check of
``sleeper.core.paths`` before the job is accepted. The raw message is kept for the tracker.

A job must name each input file once: :func:`expand_job_files` expands a job's paths (directories to the files
inside) and refuses a file reached by two of them (the same path twice, ``./x`` and ``x``, ``s3://b/k`` and ``b/k``,
or a directory and a file inside it), which would add its rows twice. Every path that reads a job's files (ingest
jobs, ``Table.ingest``, the ingest batcher, bulk import) expands them through it.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar, Self, TypeVar

from sleeper.core.jobs import wire
from sleeper.core.jobs.exceptions import MessageError, MissingFieldError
from sleeper.core.paths import check_safe_id, check_safe_path, is_s3_path, is_safe_id, normalise_s3_path

T = TypeVar("T")
F = TypeVar("F")


def new_job_id() -> str:
    """A new random job id (a UUID), as Sleeper gives jobs submitted without one."""
    return str(uuid.uuid4())


@dataclass(frozen=True, slots=True, kw_only=True)
class FileJob(wire.JsonMessage):
    """What ingest and bulk import jobs share: a job id, the files to add to a table, and the table by name or id.

    Each kind of job declares its message's fields (``FIELDS``), checks its own rules (``_check``), and reads and writes
    its own fields on top of these (``_from_fields``, ``to_dict``).

    Attributes:
        id: The job id.
        files: The files or directories to add, as given (``bucket/key`` or ``s3a://bucket/key``).
        table_name: The table's name, if given.
        table_id: The table's id, if given; it wins over the name.
        json_message: The raw message the job was read from, if any, for tracker reports (not compared).

    Raises:
        MissingFieldError: If neither a table name nor a table id is given.
    """

    FIELDS: ClassVar[frozenset[str]] = frozenset({"id", "tableName", "tableId", "files"})

    id: str
    files: tuple[str, ...]
    table_name: str | None = None
    table_id: str | None = None
    json_message: str | None = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "files", tuple(self.files))
        self._check()
        if self.table_name is None and self.table_id is None:
            raise MissingFieldError("one of tableName or tableId must be given", path="$.tableName")

    def _check(self) -> None:
        check_safe_id(self.id, where="$.id", what="job id")

    def resolve_table(self, *, by_id: Callable[[str], T | None], by_name: Callable[[str], T | None]) -> T | None:
        """Finds the job's table: by id when the job has one (the id wins), otherwise by name.

        Returns:
            What the lookup found, or None if there is no such table.
        """
        if self.table_id is not None:
            return by_id(self.table_id)
        assert self.table_name is not None
        return by_name(self.table_name)

    def with_table(self, *, table_id: str, table_name: str) -> Self:
        """This job with its table resolved to both id and name."""
        return replace(self, table_id=table_id, table_name=table_name)

    def with_files(self, files: Iterable[str]) -> Self:
        """This job with its files replaced (e.g. directories expanded to the Parquet files inside)."""
        return replace(self, files=tuple(files))

    def to_dict(self) -> dict[str, Any]:
        """The job's JSON as a dictionary (nulls omitted, fields in Sleeper's order)."""
        out: dict[str, Any] = {"id": self.id}
        if self.table_name is not None:
            out["tableName"] = self.table_name
        if self.table_id is not None:
            out["tableId"] = self.table_id
        out["files"] = list(self.files)
        return out

    @classmethod
    def from_json(
        cls,
        text: str | bytes,
        *,
        id_supplier: wire.JobIdSupplier = new_job_id,
        allow_local: bool = False,
        allowed_buckets: Collection[str] | None = None,
    ) -> Self:
        """Reads a job message.

        Args:
            text: The message body.
            id_supplier: Makes the job id when the message has none (called at most once).
            allow_local: Whether local file paths are accepted (local runtime only).
            allowed_buckets: If given, every S3 path must be in one of these buckets.

        Raises:
            MessageError: If the message is not a valid job of this kind; ``job_id`` and ``json_message`` are set on
                it.
        """
        data, raw = _parse(text, id_supplier)
        return cls.from_dict(
            data, id_supplier=id_supplier, json_message=raw, allow_local=allow_local, allowed_buckets=allowed_buckets
        )

    @classmethod
    def from_dict(
        cls,
        data: object,
        *,
        id_supplier: wire.JobIdSupplier = new_job_id,
        json_message: str | None = None,
        allow_local: bool = False,
        allowed_buckets: Collection[str] | None = None,
    ) -> Self:
        """Reads a parsed job message (see ``from_json``).

        Raises:
            MessageError: If the message is not a valid job of this kind.
        """
        fields = read_ingest_fields(
            data,
            allowed=cls.FIELDS,
            id_supplier=id_supplier,
            json_message=json_message,
            allow_local=allow_local,
            allowed_buckets=allowed_buckets,
            extra=cls._check_extra_fields,
        )
        return cls._from_fields(fields, json_message)

    @classmethod
    def _check_extra_fields(cls, obj: Mapping[str, Any], job_id: str) -> None:
        """Checks the message beyond the shared fields, given the job id (nothing for an ingest job)."""

    @classmethod
    def _from_fields(cls, fields: IngestFields, json_message: str | None) -> Self:
        return cls(
            id=fields.id,
            files=fields.files,
            table_name=fields.table_name,
            table_id=fields.table_id,
            json_message=json_message,
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class IngestJob(FileJob):
    """A request to ingest files into a table (wire JSON in the module docs).

    Raises:
        UnsafeIdError: If the id breaks the safe id rule.
        MissingFieldError: If neither a table name nor a table id is given.
    """


INGEST_JOB_FIELDS = IngestJob.FIELDS
"""The fields of an ingest job message."""


@dataclass(frozen=True, slots=True, kw_only=True)
class IngestFields:
    """The fields shared by ingest and bulk import job messages, read and checked, with the object they came from."""

    id: str
    files: tuple[str, ...]
    table_name: str | None
    table_id: str | None
    data: Mapping[str, Any]


def read_ingest_fields(
    data: object,
    *,
    allowed: Collection[str],
    id_supplier: wire.JobIdSupplier,
    json_message: str | None,
    allow_local: bool,
    allowed_buckets: Collection[str] | None,
    extra: Callable[[Mapping[str, Any], str], None] | None = None,
) -> IngestFields:
    """Reads the fields shared by ingest and bulk import job messages.

    Args:
        data: The parsed message.
        allowed: Every field the message type defines.
        id_supplier: Makes the job id when the message has none, or for the rejection of an unreadable message.
        json_message: The raw message, attached to errors.
        allow_local: Whether local file paths are accepted.
        allowed_buckets: If given, every S3 path must be in one of these buckets.
        extra: Further checks on the object, given the job id, run before the table and files are read.

    Raises:
        MessageError: With ``job_id`` and ``json_message`` set. A rejected id that is not a safe id is not used as a
            tracker key: the rejection gets a new id, and the message kept with it shows the id sent.
    """
    job_id: str | None = None
    try:
        obj = wire.expect_object(data)
        given = wire.optional_str(obj, "id")
        job_id = given if given is not None and given.strip() else id_supplier()
        wire.check_fields(obj, allowed)
        if extra is not None:
            extra(obj, job_id)
        check_safe_id(job_id, where="$.id", what="job id")
        table_name = _optional_name(obj, "tableName")
        table_id = _optional_name(obj, "tableId")
        files = wire.str_list(obj, "files", non_empty=True)
        for i, f in enumerate(files):
            check_safe_path(f, where=f"$.files[{i}]", allow_local=allow_local, allowed_buckets=allowed_buckets)
        if table_name is None and table_id is None:
            raise MissingFieldError("one of tableName or tableId must be given", path="$.tableName")
    except MessageError as e:
        e.job_id = job_id if job_id is not None and is_safe_id(job_id) else id_supplier()
        e.json_message = json_message
        raise
    return IngestFields(id=job_id, files=files, table_name=table_name, table_id=table_id, data=obj)


def _optional_name(obj: Mapping[str, Any], key: str) -> str | None:
    value = obj.get(key)
    if value is None:
        return None
    return wire.string_value(value, f"$.{key}")


def _parse(text: str | bytes, id_supplier: wire.JobIdSupplier) -> tuple[object, str | None]:
    raw = wire.message_text(text)
    try:
        return wire.parse_json(text), raw
    except MessageError as e:
        e.job_id = id_supplier()
        e.json_message = raw
        raise


def input_file_key(path: str) -> str:
    """The one name of an input file however a job spells it: ``s3a://bucket/key`` for an S3 path (``bucket/key``,
    ``s3://`` and ``s3a://`` alike; keys are taken literally, as S3 does), and for a local path (or ``file://`` URI)
    the absolute path with ``.``, ``..``, repeated separators and symbolic links resolved."""
    if is_s3_path(path):
        return f"s3a://{normalise_s3_path(path)}"
    local = path[len("file://") :] if path.lower().startswith("file://") else path
    return os.path.realpath(local)


def duplicate_file_problems(expanded: Iterable[tuple[str, Iterable[str]]]) -> list[str]:
    """Why a job's paths name some file more than once (empty if each file is named once).

    Args:
        expanded: Each path as the job gives it, with the files it names (a file itself; a directory, the files
            found inside), in the job's order.

    Returns:
        One reason per pair of paths that name the same files, naming both paths, how many files they share, one
        of them, and what to do.
    """
    first_named_by: dict[str, int] = {}
    given_paths: list[str] = []
    shared: dict[tuple[int, int], list[str]] = {}
    for index, (given, files) in enumerate(expanded):
        given_paths.append(given)
        for file in files:
            key = input_file_key(file)
            earlier = first_named_by.get(key)
            if earlier is None:
                first_named_by[key] = index
            else:
                shared.setdefault((earlier, index), []).append(file)
    problems: list[str] = []
    for (earlier, later), files in shared.items():
        first, second = given_paths[earlier], given_paths[later]
        if earlier == later:
            where = f"the path {first!r} names it twice"
        elif first == second:
            where = f"the path {first!r} is given more than once"
        else:
            where = f"the paths {first!r} and {second!r} both name it"
        more = f", and {len(files) - 1} more files" if len(files) > 1 else ""
        problems.append(
            f"Input file {files[0]} is named more than once ({where}{more}): its rows would be ingested twice; "
            f"name each file or directory once (remove the repeated path)"
        )
    return problems


def expand_job_files(
    paths: Sequence[str],
    expand: Callable[[str], tuple[Sequence[F], Sequence[str]]],
    file_path: Callable[[F], str],
) -> tuple[list[F], list[str]]:
    """Expands a job's paths to its input files and checks that no file is named twice.

    Args:
        paths: The paths the job names, in order.
        expand: Expands one path to its files, with any reasons it is unusable (e.g.
            ``lambda p: sleeper.io.input_files.expand_paths([p])``).
        file_path: The path or URI of an expanded file.

    Returns:
        Every file in the job's order, and the reasons to reject the job: each unusable path, then each file named
        more than once (:func:`duplicate_file_problems`); empty if the job's files may be read.
    """
    files: list[F] = []
    reasons: list[str] = []
    named: list[tuple[str, list[str]]] = []
    for given in paths:
        found, unusable = expand(given)
        files.extend(found)
        reasons.extend(unusable)
        named.append((given, [file_path(f) for f in found]))
    reasons.extend(duplicate_file_problems(named))
    return files, reasons
