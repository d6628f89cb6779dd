"""Filesystems by URI: local paths and ``file://`` URIs on the local disk, ``s3://`` and ``s3a://`` URIs on S3.

Sleeper records data files with their scheme (``s3a://bucket/<table id>/data/partition_root/x.parquet``), so every
reader and writer starts from a URI: :func:`resolve` turns it into a ``pyarrow.fs.FileSystem`` and the path within
it. S3 filesystems are built from :class:`S3Options` and kept, one per distinct set of options, because building one
is slow and each holds a connection pool.

pyarrow's S3 client ignores ``AWS_ENDPOINT_URL``, so an emulator (a moto server, LocalStack) must be named in
:attr:`S3Options.endpoint_override`; reading the environment is left to the runtime.

The helpers below take a filesystem and a path (as :func:`resolve` returns them) and translate "not found" into
:class:`~sleeper.io.exceptions.MissingFileError`. :func:`publish_no_clobber` moves a complete file to its final path
unless a file is already there (docs/reliability.md B3: a run's output never replaces another run's).
"""

from __future__ import annotations

import functools
import logging
import os
import posixpath
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal, TypeAlias

import pyarrow as pa
from pyarrow import fs as pafs

from sleeper.core.statestore import file_outside_table, is_table_prefix
from sleeper.io.exceptions import MissingFileError, UnsafeDeleteError, UnsupportedLocationError
from sleeper.io.memory import tune_memory_once

_LOG = logging.getLogger(__name__)

__all__ = [
    "S3_SCHEMES",
    "FileSystemOptions",
    "S3CopyIfAbsent",
    "S3Options",
    "delete",
    "delete_in_table",
    "delete_unreferenced",
    "ensure_parent_dir",
    "exists",
    "filesystem_path",
    "list_files",
    "local_filesystem",
    "open_input",
    "open_output",
    "publish_no_clobber",
    "read_bytes",
    "resolve",
    "s3_filesystem",
    "size",
    "write_bytes",
]

S3_SCHEMES = ("s3", "s3a")
"""URI schemes served by S3. Sleeper records ``s3a://`` paths; both name the same objects."""

_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.\-]*)://")
_ENDPOINT_SCHEME = re.compile(r"^(https?)://", re.IGNORECASE)


@dataclass(frozen=True, slots=True, kw_only=True)
class S3Options:
    """How to reach S3.

    Attributes:
        region: The AWS region; None lets the AWS SDK decide (environment, profile, instance metadata).
        endpoint_override: Another endpoint, such as ``127.0.0.1:5000`` or ``http://127.0.0.1:5000`` for a moto
            server. A ``http://`` or ``https://`` prefix sets the scheme and overrides :attr:`scheme`.
        scheme: ``https`` (default) or ``http``.
        access_key: An access key id; None uses the standard AWS credential chain.
        secret_key: The secret access key that goes with ``access_key``.
        session_token: The session token of temporary credentials.
        anonymous: Connect without credentials (public buckets).
        connect_timeout: Socket connection timeout in seconds; None keeps the SDK default.
        request_timeout: Socket read timeout in seconds; None keeps the SDK default.
        max_attempts: How many times a failed request is tried (AWS standard retry strategy).
    """

    region: str | None = None
    endpoint_override: str | None = None
    scheme: Literal["http", "https"] = "https"
    access_key: str | None = None
    secret_key: str | None = field(default=None, repr=False)
    session_token: str | None = field(default=None, repr=False)
    anonymous: bool = False
    connect_timeout: float | None = None
    request_timeout: float | None = None
    max_attempts: int = 3


S3CopyIfAbsent: TypeAlias = Callable[[S3Options, str, str], bool]
"""Copies an S3 object to a key only if no object has that key, atomically (a copy with ``If-None-Match: *``), given
how to reach S3, the source and the target (each ``bucket/key``); returns whether it copied. pyarrow's S3 filesystem
has no conditional write, so this comes from the AWS adapters (:func:`sleeper.adapters.aws.s3_publish.copy_if_absent`),
given by the runtime in :attr:`FileSystemOptions.s3_copy_if_absent`."""


@dataclass(frozen=True, slots=True, kw_only=True)
class FileSystemOptions:
    """Options for every filesystem a URI can name.

    Attributes:
        s3: How to reach S3, for ``s3://`` and ``s3a://`` URIs.
        s3_copy_if_absent: The conditional copy :func:`publish_no_clobber` publishes S3 files with; without it an S3
            publish checks then moves, which is not atomic.
    """

    s3: S3Options = field(default_factory=S3Options)
    s3_copy_if_absent: S3CopyIfAbsent | None = None


_DEFAULT_OPTIONS = FileSystemOptions()


def filesystem_path(uri: str) -> str:
    """The path of a URI within its filesystem: the URI with any ``scheme://`` removed.

    ``s3a://bucket/key`` becomes ``bucket/key`` (the form ``pyarrow.fs.S3FileSystem`` takes), ``file:///dir/x``
    becomes ``/dir/x``, and a plain path is returned unchanged.
    """
    match = _SCHEME.match(uri)
    return uri[match.end() :] if match else uri


def resolve(
    uri: str,
    options: FileSystemOptions | None = None,
    *,
    filesystem: pafs.FileSystem | None = None,
) -> tuple[pafs.FileSystem, str]:
    """The filesystem a URI names and the path within it.

    Args:
        uri: A local path (made absolute), a ``file://`` URI, or a ``s3://bucket/key`` / ``s3a://bucket/key`` URI.
        options: How to reach S3; the defaults use the standard AWS configuration.
        filesystem: A filesystem to use instead of the one the scheme names (such as an in-memory one in tests);
            the URI's scheme, if any, is then only stripped.

    Returns:
        The filesystem and the path within it.

    Raises:
        UnsupportedLocationError: If the scheme is not a local or S3 one, or an S3 URI has no bucket.
    """
    if filesystem is not None:
        return filesystem, filesystem_path(uri)
    match = _SCHEME.match(uri)
    if match is None:
        return local_filesystem(), os.path.abspath(uri)
    scheme = match.group(1).lower()
    rest = uri[match.end() :]
    if scheme == "file":
        if not rest.startswith("/"):
            raise UnsupportedLocationError(f"file URI must hold an absolute path: {uri!r}")
        return local_filesystem(), rest
    if scheme in S3_SCHEMES:
        bucket = rest.split("/", 1)[0]
        if not bucket:
            raise UnsupportedLocationError(f"S3 URI has no bucket: {uri!r}")
        return s3_filesystem((options or _DEFAULT_OPTIONS).s3), rest.rstrip("/")
    raise UnsupportedLocationError(f"no filesystem for scheme {scheme!r} in {uri!r} (expected a path, file://, s3://)")


@functools.cache
def local_filesystem() -> pafs.FileSystem:
    """The local filesystem (one shared instance)."""
    return pafs.LocalFileSystem()


def s3_filesystem(options: S3Options) -> pafs.FileSystem:
    """The S3 filesystem for a set of options, built once per distinct options and then shared.

    Args:
        options: How to reach S3.
    """
    return _s3_filesystem(options)


@functools.cache
def _s3_filesystem(options: S3Options) -> pafs.FileSystem:
    scheme: str = options.scheme
    endpoint = options.endpoint_override
    if endpoint is not None:
        match = _ENDPOINT_SCHEME.match(endpoint)
        if match:
            scheme = match.group(1).lower()
            endpoint = endpoint[match.end() :]
        endpoint = endpoint.rstrip("/")
    return pafs.S3FileSystem(
        access_key=options.access_key,
        secret_key=options.secret_key,
        session_token=options.session_token,
        anonymous=options.anonymous,
        region=options.region,
        scheme=scheme,
        endpoint_override=endpoint,
        connect_timeout=options.connect_timeout,
        request_timeout=options.request_timeout,
        retry_strategy=pafs.AwsStandardS3RetryStrategy(max_attempts=options.max_attempts),
    )


def exists(filesystem: pafs.FileSystem, path: str) -> bool:
    """Whether a file (not a directory) exists at a path."""
    return bool(filesystem.get_file_info(path).type == pafs.FileType.File)


def size(filesystem: pafs.FileSystem, path: str) -> int:
    """The size of a file in bytes.

    Raises:
        MissingFileError: If there is no file at the path.
    """
    info = filesystem.get_file_info(path)
    if info.type != pafs.FileType.File:
        raise MissingFileError(f"no file at {path!r}")
    return int(info.size)


def delete(filesystem: pafs.FileSystem, path: str) -> None:
    """Deletes a file; a file that does not exist is not an error (so a repeated delete succeeds)."""
    try:
        filesystem.delete_file(path)
    except FileNotFoundError:
        return


def delete_in_table(filesystem: pafs.FileSystem, path: str, data_prefix: str, *, whole_table: bool = False) -> None:
    """Deletes a file of a table, or with ``whole_table`` everything under the table's prefix: the guard every delete
    of a table's files goes through (garbage collection, reinitialisation, table deletion, the orphan sweep, the
    cleanup of a failed write).

    The path must lie strictly under the table's data prefix (``whole_table``: name the prefix itself), by the one
    rule the state store also validates transactions with (:func:`sleeper.core.statestore.locations.
    file_outside_table`), so a file of another table, another bucket or a path with ``..`` is never deleted. A file
    that does not exist is not an error.

    Args:
        filesystem: The filesystem the path is on.
        path: The file (or prefix) as ``filesystem`` names it, or as a URI.
        data_prefix: The URI of the table's data prefix.
        whole_table: Delete the table's whole prefix (``path`` must be the prefix).

    Raises:
        UnsafeDeleteError: If the path is not under (or, ``whole_table``, is not) the table's prefix; nothing is
            deleted.
        OSError: If the filesystem fails.
    """
    if whole_table:
        if not is_table_prefix(path, data_prefix):
            raise UnsafeDeleteError(f"refused to delete {path}: it is not the table's data prefix {data_prefix}")
        if filesystem.get_file_info(path).type != pafs.FileType.NotFound:
            filesystem.delete_dir(path)
        return
    reason = file_outside_table(path, data_prefix)
    if reason is not None:
        raise UnsafeDeleteError(f"refused to delete {path}: {reason}")
    delete(filesystem, path)


def delete_unreferenced(filesystem: pafs.FileSystem, path: str, data_prefix: str) -> bool:
    """Deletes a file of a table that no transaction references (the cleanup of a write that failed or whose commit
    was skipped), through :func:`delete_in_table`.

    A delete that fails (on AWS only the garbage collector's role may delete data files) or is refused (the path is
    outside the table's prefix) is logged and the file left: the orphan sweeper removes a file of the table once it
    is old enough. Returns whether the file is gone.
    """
    try:
        delete_in_table(filesystem, path, data_prefix)
    except UnsafeDeleteError as e:
        _LOG.error("Did not delete %s: %s", path, e)
        return False
    except OSError as e:
        _LOG.warning("Left unreferenced file %s for the orphan sweeper: %s", path, e)
        return False
    return True


def publish_no_clobber(
    filesystem: pafs.FileSystem, staging: str, final: str, *, options: FileSystemOptions | None = None
) -> bool:
    """Moves a complete file from a staging path to its final path, unless a file is already at the final path.

    A file at the final path is never replaced, truncated or deleted, so a file published whole stays whole. How:

    * local disk: ``os.link`` (atomic; fails if the final path exists), then the staging file is removed;
    * S3 with :attr:`FileSystemOptions.s3_copy_if_absent`: a server-side copy with ``If-None-Match: *`` (atomic),
      then the staging object is deleted;
    * any other filesystem (an in-memory one in tests, S3 without the conditional copy): a check that the final path
      is free, then a move. Not atomic: two publishers between the check and the move can both move.

    Args:
        filesystem: The filesystem both paths are on.
        staging: The complete file, as ``filesystem`` names it.
        final: Where to publish it, beside it (the same directory or key prefix).
        options: How to reach S3 and the conditional copy to use there.

    Returns:
        True if the file was published (the staging file is gone); False if a file was already at the final path,
        which is left untouched, as is the staging file (the caller discards it).

    Raises:
        MissingFileError: If there is no staging file.
        OSError: If the filesystem fails; the final path then holds either nothing new or the whole file.
    """
    if filesystem.type_name == "local":
        try:
            os.link(staging, final)
        except FileExistsError:
            return False
        except FileNotFoundError as e:
            raise MissingFileError(f"no file at {staging!r}") from e
        os.unlink(staging)
        return True
    copy_if_absent = (options or _DEFAULT_OPTIONS).s3_copy_if_absent
    if filesystem.type_name == "s3" and copy_if_absent is not None:
        if not exists(filesystem, staging):
            raise MissingFileError(f"no file at {staging!r}")
        if not copy_if_absent((options or _DEFAULT_OPTIONS).s3, staging, final):
            return False
        delete(filesystem, staging)
        return True
    if filesystem.type_name == "s3":
        _warn_s3_publish_not_atomic()
    if exists(filesystem, final):
        return False
    if not exists(filesystem, staging):
        raise MissingFileError(f"no file at {staging!r}")
    filesystem.move(staging, final)
    return True


@functools.cache
def _warn_s3_publish_not_atomic() -> None:
    _LOG.warning("Publishing files on S3 with a check then a move (not atomic): no s3_copy_if_absent was given")


def list_files(filesystem: pafs.FileSystem, prefix: str) -> list[pafs.FileInfo]:
    """Every file under a directory, recursively, sorted by path.

    Args:
        filesystem: The filesystem.
        prefix: The directory (on S3, a key prefix ending at a ``/`` boundary: ``bucket/table/data``).

    Returns:
        The files' infos (``path``, ``size``, ``mtime``); empty if the directory does not exist.
    """
    selector = pafs.FileSelector(prefix.rstrip("/"), recursive=True, allow_not_found=True)
    infos = [info for info in filesystem.get_file_info(selector) if info.type == pafs.FileType.File]
    return sorted(infos, key=lambda info: str(info.path))


def open_input(filesystem: pafs.FileSystem, path: str) -> pa.NativeFile:
    """Opens a file for random access reads, as a Parquet reader needs.

    Readers of Parquet should open the result with ``pyarrow.parquet.ParquetFile(f, pre_buffer=False)``: with
    pre-buffering pyarrow fetches every requested row group before decoding the first, which holds whole files in
    memory.

    The first file a process opens (or writes) applies :func:`sleeper.io.memory.tune_memory_once`, so that the
    readers and writers it creates allocate as that module says.

    Raises:
        MissingFileError: If there is no file at the path.
    """
    tune_memory_once()
    try:
        return filesystem.open_input_file(path)
    except FileNotFoundError as e:
        raise MissingFileError(f"no file at {path!r}") from e


def ensure_parent_dir(filesystem: pafs.FileSystem, path: str) -> None:
    """Creates the directory a file will be written in, on the local disk only (S3 has no directories)."""
    if filesystem.type_name == "local":
        parent = posixpath.dirname(path)
        if parent:
            filesystem.create_dir(parent, recursive=True)


def open_output(filesystem: pafs.FileSystem, path: str) -> pa.NativeFile:
    """Opens a file for writing, creating its local directory first. On S3 the object appears when it is closed.

    Like :func:`open_input`, it applies :func:`sleeper.io.memory.tune_memory_once` first.
    """
    tune_memory_once()
    ensure_parent_dir(filesystem, path)
    return filesystem.open_output_stream(path)


def read_bytes(filesystem: pafs.FileSystem, path: str) -> bytes:
    """The whole content of a (small) file.

    Raises:
        MissingFileError: If there is no file at the path.
    """
    try:
        with filesystem.open_input_stream(path) as stream:
            return bytes(stream.read())
    except FileNotFoundError as e:
        raise MissingFileError(f"no file at {path!r}") from e


def write_bytes(filesystem: pafs.FileSystem, path: str, data: bytes) -> None:
    """Writes a (small) file whole, replacing any file at the path."""
    with open_output(filesystem, path) as stream:
        stream.write(data)
