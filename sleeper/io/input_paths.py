"""Input paths as a user gives them (the CLI, the Python API), resolved once for every job that reads files.

A path with the ``s3://`` or ``s3a://`` scheme names S3. Any other path is a local path: a ``file://`` URI, an
absolute path, or a path relative to the working directory (``parquet-files/``), made absolute here so a job that
runs later, in another process, reads the same files. A local path that names nothing is refused at once, naming it.

Sleeper's own ``bucket/key`` form (no scheme) is what Sleeper's client sends in job messages; job messages keep it
(:func:`sleeper.io.input_files.expand_paths` reads a message's paths), but from a user a path with no scheme is local:
S3 needs its scheme. Ingest (``Table.ingest``, ``sleeper ingest``), the ingest batcher (``sleeper batcher submit``)
and bulk import (``sleeper bulk-import``) resolve their paths with :func:`resolve_input_paths`.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from sleeper.core import S3_SCHEMES
from sleeper.io.exceptions import MissingFileError, UnsupportedLocationError

__all__ = ["is_s3_uri", "resolve_input_path", "resolve_input_paths"]

_LOCAL_URI = "file://"


def is_s3_uri(path: str | Path) -> bool:
    """Whether a path given by a user names S3: it starts with ``s3://`` or ``s3a://`` (any case)."""
    text = str(path)
    scheme, sep, _ = text.partition("://")
    return bool(sep) and scheme.lower() in S3_SCHEMES


def resolve_input_path(path: str | Path, *, cwd: str | Path | None = None) -> str:
    """One input path as a job reads it: an S3 URI unchanged, any other path an absolute local path.

    Args:
        path: ``s3://bucket/key``, ``s3a://bucket/key``, ``file:///abs/path``, an absolute path, or a path relative
            to the working directory.
        cwd: The directory a relative path is relative to (the working directory if None).

    Returns:
        The S3 URI, or the local path made absolute (``..`` and symbolic links resolved).

    Raises:
        MissingFileError: If a local path names no file or directory (the message names the path as given).
        UnsupportedLocationError: If the path has a scheme other than ``s3``, ``s3a`` or ``file``.
    """
    text = str(path)
    if is_s3_uri(text):
        return text
    if text.lower().startswith(_LOCAL_URI):
        text = text[len(_LOCAL_URI) :]
    elif "://" in text:
        scheme = text.partition("://")[0]
        raise UnsupportedLocationError(f"cannot read {text!r}: scheme {scheme!r} is not s3://, s3a:// or file://")
    if not text:
        raise MissingFileError("an input path is empty")
    local = Path(text).expanduser()
    if not local.is_absolute():
        local = Path(cwd if cwd is not None else os.getcwd()) / local
    if not local.exists():
        shown = str(path) if str(path) == str(local) else f"{path} ({local})"
        raise MissingFileError(f"no file or directory {shown}; S3 paths need s3:// or s3a://")
    return str(local.resolve())


def resolve_input_paths(paths: Iterable[str | Path], *, cwd: str | Path | None = None) -> tuple[str, ...]:
    """Every input path as a job reads it (see :func:`resolve_input_path`), in order.

    Raises:
        MissingFileError: Naming the first local path that names nothing.
        UnsupportedLocationError: If a path has an unknown scheme.
    """
    return tuple(resolve_input_path(p, cwd=cwd) for p in paths)
