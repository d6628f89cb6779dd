"""File paths in messages: S3 path normalisation and the safety check run before any I/O (docs/reliability.md, row E).

Sleeper accepts S3 paths as ``bucket/key``, ``s3://bucket/key`` or ``s3a://bucket/key`` (``S3Path.java``). A path
from a message is checked before it is listed, read or deleted: path traversal (``..`` segments, also when
percent-encoded), backslashes, control characters, unexpected schemes, absolute local paths where only S3 is allowed,
and buckets outside an allowlist are all rejected with ``UnsafePathError``.

Ids that become part of a path or key (query, sub-query, compaction, ingest and bulk import job ids, partition ids)
follow one rule, checked by ``check_safe_id`` when a message is read: ``SAFE_ID_RULE``. Paths built from such ids go
through ``join_under``, which refuses any part that could leave its root.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from urllib.parse import unquote

from sleeper.core.jobs.exceptions import UnsafeIdError, UnsafePathError

S3_SCHEMES = ("s3", "s3a")
"""URI schemes that name S3 objects."""

LOCAL_SCHEME = "file"
"""The URI scheme of local files, allowed only where local paths are."""

MAX_PATH_BYTES = 4096
"""The longest path accepted, in UTF-8 bytes (S3 keys are at most 1024 bytes)."""

MAX_ID_LENGTH = 128
"""The longest id accepted (Sleeper's own ids are 36-character UUIDs)."""

SAFE_ID_RULE = (
    f"1 to {MAX_ID_LENGTH} characters, each an ASCII letter, a digit, '-', '_' or '.', and not '.' or '..' "
    "(a UUID is a safe id)"
)
"""The rule every id used in a path or key follows, as named in errors."""

_SAFE_ID = re.compile(rf"[A-Za-z0-9._-]{{1,{MAX_ID_LENGTH}}}", re.ASCII)
_SHOWN_ID_CHARS = 80
_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*):")
_BUCKET = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,254}$")
_MAX_DECODE_ROUNDS = 4
_CONTROL_OR_BACKSLASH = re.compile(r"[\x00-\x1f\x7f\\]")
"""A control character or a backslash: searched for in C, as every file a transaction names is checked."""
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def split_s3_path(path: str) -> tuple[str, str]:
    """Splits an S3 path into bucket and key, as Sleeper does.

    The ``s3://`` or ``s3a://`` prefix is optional; slashes at the start of the key are dropped; a path with no
    slash names a whole bucket (empty key). No safety checks are made: see ``check_safe_path``.

    Args:
        path: ``bucket/key``, ``s3://bucket/key`` or ``s3a://bucket/key``.

    Returns:
        The bucket name and the key (possibly empty).
    """
    rest = path
    for scheme in S3_SCHEMES:
        prefix = f"{scheme}://"
        if path.startswith(prefix):
            rest = path[len(prefix) :]
            break
    bucket, _, key = rest.partition("/")
    return bucket, key.lstrip("/")


def normalise_s3_path(path: str) -> str:
    """An S3 path in Sleeper's ``bucket/key`` form, without scheme (``bucket`` alone for a whole bucket)."""
    bucket, key = split_s3_path(path)
    return f"{bucket}/{key}" if key else bucket


def is_s3_path(path: str) -> bool:
    """Whether a path is an S3 path: it has an S3 scheme, or no scheme and is not an absolute local path."""
    match = _SCHEME.match(path)
    if match:
        return match.group(1).lower() in S3_SCHEMES and path[match.end() :].startswith("//")
    return not path.startswith("/")


def check_safe_path(
    path: str,
    *,
    where: str = "$",
    allow_local: bool = False,
    allowed_buckets: Collection[str] | None = None,
) -> str:
    """Checks that a path from a message is safe to use, before any I/O.

    Args:
        path: An S3 path (``bucket/key``, ``s3://…``, ``s3a://…``) or, if allowed, a local path (``/abs/path`` or
            ``file:///abs/path``).
        where: The JSON path of the value, named in the error.
        allow_local: Whether local paths are accepted (the local runtime); otherwise only S3 paths are.
        allowed_buckets: If given, S3 paths must be in one of these buckets.

    Returns:
        The path, unchanged.

    Raises:
        UnsafePathError: If the path is empty or too long, holds a control character or backslash, has a ``..`` or
            ``.`` segment (also percent-encoded), an unknown scheme, is local when that is not allowed, or names an
            invalid or disallowed bucket.
    """
    if not path:
        raise UnsafePathError("path is empty", path=where)
    try:
        size = len(path.encode("utf-8"))
    except UnicodeEncodeError:
        raise UnsafePathError("path is not valid Unicode text", path=where) from None
    if size > MAX_PATH_BYTES:
        raise UnsafePathError(f"path is longer than {MAX_PATH_BYTES} bytes", path=where)
    for form in _decodings(path):
        _check_characters(form, where)
    match = _SCHEME.match(path)
    if match:
        scheme = match.group(1).lower()
        rest = path[match.end() :]
        if not rest.startswith("//"):
            raise UnsafePathError(f"path with scheme {scheme!r} must continue with '//'", path=where)
        if scheme in S3_SCHEMES:
            _check_s3(rest[2:], where, allowed_buckets)
        elif scheme == LOCAL_SCHEME:
            if not allow_local:
                raise UnsafePathError("local file paths are not allowed here", path=where)
            _check_segments(rest[2:], where)
        else:
            raise UnsafePathError(f"scheme {scheme!r} is not allowed; use s3:// or s3a://", path=where)
    elif path.startswith("/"):
        if not allow_local:
            raise UnsafePathError("absolute local paths are not allowed here", path=where)
        _check_segments(path, where)
    else:
        _check_s3(path, where, allowed_buckets)
    return path


def check_key_under(key: str, prefix: str, *, where: str = "$") -> str:
    """Checks that an object key from a message is a safe relative key under an expected prefix.

    Used for pointers such as a transaction body key (``<tableId>/statestore/transactions/…``) or a compaction batch
    key (``<tableId>/compactions/…``), so a message cannot point a worker at another table's objects.

    Returns:
        The key, unchanged.

    Raises:
        UnsafePathError: If the key is unsafe (as for ``check_safe_path``), has a scheme, is absolute, or does not
            start with the prefix.
    """
    if _SCHEME.match(key) or key.startswith("/"):
        raise UnsafePathError("must be an object key relative to the bucket, not a path or URI", path=where)
    check_safe_path(f"bucket/{key}", where=where)
    if not key.startswith(prefix) or len(key) == len(prefix):
        raise UnsafePathError(f"key must be under {prefix!r}", path=where)
    return key


def check_safe_id(value: str, *, where: str = "$", what: str = "id") -> str:
    """Checks that an id can safely become part of a file name, object key or tracker key (``SAFE_ID_RULE``).

    Args:
        value: The id.
        where: The JSON path of the value, named in the error.
        what: What the id is ("query id", "ingest job id", …), named in the error.

    Returns:
        The id, unchanged.

    Raises:
        UnsafeIdError: If the id breaks the rule.
    """
    if not is_safe_id(value):
        shown = value if len(value) <= _SHOWN_ID_CHARS else value[:_SHOWN_ID_CHARS] + "…"
        raise UnsafeIdError(f"{what} {shown!r} is not allowed: an id must be {SAFE_ID_RULE}", path=where)
    return value


def is_safe_id(value: str) -> bool:
    """Whether an id follows ``SAFE_ID_RULE`` (see ``check_safe_id``)."""
    return _SAFE_ID.fullmatch(value) is not None and value not in (".", "..")


def join_under(root: str, *names: str) -> str:
    """Joins names under a root (a local path, ``file://``, ``s3://`` or ``bucket/prefix``), refusing any name that
    could leave the root or reach into another name's place.

    The root is trusted (it comes from configuration). Each name is one segment of the path: it must be non-empty, not
    '.' or '..', and hold no '/', backslash or control character, also when percent-encoded.

    Returns:
        ``<root>/<name>/<name>…`` (one slash after the root, whether or not it ends with one).

    Raises:
        UnsafePathError: If no name is given or a name breaks these rules.
    """
    if not names:
        raise UnsafePathError(f"no name was given to join under {root!r}", path="$")
    for name in names:
        for form in _decodings(name):
            if form in ("", ".", "..") or "/" in form or "\\" in form or _CONTROL.search(form) is not None:
                raise UnsafePathError(
                    f"{name!r} cannot be joined under {root!r}: a name must be one non-empty path segment, not '.' or "
                    "'..', with no '/', backslash or control character",
                    path="$",
                )
    base = root if root.endswith("/") else root + "/"
    return base + "/".join(names)


def _check_s3(rest: str, where: str, allowed_buckets: Collection[str] | None) -> None:
    bucket, _, _ = rest.partition("/")
    if not _BUCKET.match(bucket) or ".." in bucket:
        raise UnsafePathError(f"invalid bucket name {bucket!r}", path=where)
    if allowed_buckets is not None and bucket not in allowed_buckets:
        raise UnsafePathError(f"bucket {bucket!r} is not allowed", path=where)
    _check_segments(rest, where)


def _decodings(path: str) -> list[str]:
    """The path and its percent-decodings, repeated so double encoding (%252e) is seen too."""
    forms = [path]
    for _ in range(_MAX_DECODE_ROUNDS):
        decoded = unquote(forms[-1], errors="surrogateescape")
        if decoded == forms[-1]:
            break
        forms.append(decoded)
    return forms


def _check_characters(form: str, where: str) -> None:
    found = _CONTROL_OR_BACKSLASH.search(form)
    if found is None:
        return
    if found.group() == "\\":
        raise UnsafePathError("path contains a backslash", path=where)
    raise UnsafePathError(f"path contains control character U+{ord(found.group()):04X}", path=where)


def _check_segments(rest: str, where: str) -> None:
    for form in _decodings(rest):
        for segment in form.split("/"):
            if segment in ("..", "."):
                raise UnsafePathError(f"path has a {segment!r} segment (path traversal)", path=where)
