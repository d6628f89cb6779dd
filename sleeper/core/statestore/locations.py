"""Where a table's files may be: under the table's own data prefix, ``<data bucket or directory>/<table id>/``.

One rule, used everywhere a file of a table is accepted or deleted (beyond Sleeper, whose IAM grants confine deletes
to the data bucket but not to a table):

* the state store refuses a transaction naming a file outside the table's prefix when it validates it, whatever
  sent it (a synchronous commit, the committer queue, a bulk import), so no table can track another's files;
* every delete of a table's files (garbage collection, table reinitialisation and deletion, the orphan sweep, the
  cleanup of a failed write) goes through a guard built on this rule, so a bad entry can never delete another
  table's data.

A location is a URI (``s3a://bucket/<table id>/data/...``, ``file:///dir/data/<table id>/data/...``) or a
filesystem path as ``pyarrow.fs`` names it (``bucket/<table id>/...`` on S3, ``/dir/...`` on the local disk);
``s3://`` and ``s3a://`` name the same objects.
"""

from __future__ import annotations

import re

from sleeper.core.jobs.exceptions import UnsafePathError
from sleeper.core.paths import check_safe_path
from sleeper.core.statestore.exceptions import FileOutsideTableError

__all__ = ["check_file_in_table", "file_outside_table", "is_table_prefix"]

_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.\-]*)://")


def _location(uri: str) -> tuple[str, str]:
    """The kind of storage a location names and the path in it (``s3``/``s3a`` are one; ``file://`` is a local path;
    an absolute path is local, any other path without a scheme is ``bucket/key`` on S3)."""
    match = _SCHEME.match(uri)
    if match is None:
        return ("file", uri) if uri.startswith("/") else ("s3", uri)
    scheme = match.group(1).lower()
    rest = uri[match.end() :]
    if scheme in ("s3", "s3a"):
        return "s3", rest
    return scheme, rest


def file_outside_table(filename: str, data_prefix: str) -> str | None:
    """Why a file does not belong to a table, or None if it lies strictly under the table's data prefix.

    Args:
        filename: A file as the state store records it, or its filesystem path.
        data_prefix: The URI of the table's data prefix (``s3a://<data bucket>/<table id>``, or
            ``file:///<instance>/data/<table id>`` on a local instance).

    Returns:
        The reason (an unsafe path: traversal, control characters, an unknown scheme; or outside the prefix), or None.
    """
    try:
        check_safe_path(filename, allow_local=True)
    except UnsafePathError as e:
        return f"unsafe path: {e}"
    kind, path = _location(filename)
    prefix_kind, prefix = _location(data_prefix)
    prefix = prefix.rstrip("/")
    if kind != prefix_kind or not prefix or not path.startswith(prefix + "/") or len(path) == len(prefix) + 1:
        return f"outside the table's data prefix {data_prefix}"
    return None


def is_table_prefix(location: str, data_prefix: str) -> bool:
    """Whether a location names the table's data prefix itself (the directory a table deletion removes whole)."""
    try:
        check_safe_path(location, allow_local=True)
    except UnsafePathError:
        return False
    kind, path = _location(location)
    prefix_kind, prefix = _location(data_prefix)
    prefix = prefix.rstrip("/")
    return bool(prefix) and kind == prefix_kind and path.rstrip("/") == prefix


def check_file_in_table(filename: str, data_prefix: str, *, table_id: str) -> None:
    """Checks that a file named in a transaction lies under the table's data prefix.

    Raises:
        FileOutsideTableError: Naming the file and why it does not belong to the table.
    """
    reason = file_outside_table(filename, data_prefix)
    if reason is not None:
        raise FileOutsideTableError(f"file {filename} does not belong to table {table_id}: {reason}")
