"""Helpers to read and write Sleeper's wire JSON with typed errors that name the JSON path of a bad value.

Readers follow Gson's conventions where Sleeper relies on them: an explicit ``null`` is the same as an absent field,
and string maps accept numbers and booleans (Gson reads them as their text). Unlike Gson, fields a message type does
not define are rejected, so typos such as ``"tablename"`` fail loudly instead of being dropped.
"""

from __future__ import annotations

import json
import re
from abc import ABC, abstractmethod
from collections.abc import Callable, Collection, Mapping
from typing import Any, Self

from sleeper.core.exceptions import SleeperError, TableNotFoundError
from sleeper.core.jobs.exceptions import (
    InvalidFieldError,
    MalformedJsonError,
    MessageError,
    MissingFieldError,
    UnknownFieldError,
    UnknownTableError,
)
from sleeper.core.paths import check_safe_id
from sleeper.core.schema import Schema

SchemaLookup = Callable[[str], Schema | None]
"""Finds a table's schema by table id or name; returns None or raises ``TableNotFoundError`` if there is none."""

JobIdSupplier = Callable[[], str]
"""Makes a new job id (a UUID in production; injected so tests are deterministic)."""

_SIMPLE_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def parse_json(text: str | bytes | bytearray) -> object:
    """Parses a message body.

    Raises:
        MalformedJsonError: If the text is not UTF-8, not JSON, holds NaN or Infinity, or is nested too deeply.
    """
    if isinstance(text, bytes | bytearray):
        try:
            text = bytes(text).decode("utf-8")
        except UnicodeDecodeError as e:
            raise MalformedJsonError(f"message is not UTF-8 text: {e}") from None
    if not isinstance(text, str):
        raise MalformedJsonError(f"message must be text, got {type(text).__name__}")
    try:
        return json.loads(text, parse_constant=_reject_constant)
    except MalformedJsonError:
        raise
    except json.JSONDecodeError as e:
        raise MalformedJsonError(f"not valid JSON: {e.msg} at line {e.lineno} column {e.colno}") from None
    except ValueError as e:  # e.g. an integer literal longer than Python's digit limit
        raise MalformedJsonError(f"not valid JSON: {e}") from None
    except RecursionError:
        raise MalformedJsonError("JSON is nested too deeply") from None


def message_text(text: object) -> str | None:
    """The text of a message body for tracker reports (undecodable bytes replaced), or None if it is not text."""
    if isinstance(text, str):
        return text
    if isinstance(text, bytes | bytearray):
        return bytes(text).decode("utf-8", errors="replace")
    return None


def _reject_constant(name: str) -> object:
    raise MalformedJsonError(f"not valid JSON: {name} is not a JSON number")


def to_json(data: Mapping[str, Any], *, indent: int | None = None) -> str:
    """Writes a message as JSON: compact like Gson, or indented for files and approvals."""
    if indent is None:
        return json.dumps(data, separators=(",", ":"))
    return json.dumps(data, indent=indent)


class JsonMessage(ABC):
    """A message model whose JSON is its ``to_dict`` written by :func:`to_json`, read back by ``from_dict``.

    A model defines ``to_dict`` and ``from_dict`` (which raises ``MessageError`` naming the bad field's path) and gets
    ``to_json`` and ``from_json`` from here.
    """

    __slots__ = ()

    @abstractmethod
    def to_dict(self) -> dict[str, Any]:
        """The message as a dictionary (Sleeper's field names and order, nulls omitted)."""

    @classmethod
    @abstractmethod
    def from_dict(cls, data: object) -> Self:
        """Reads a parsed message.

        Raises:
            MessageError: If it is not a valid message of this kind.
        """

    def to_json(self, *, indent: int | None = None) -> str:
        """The message's JSON, as Sleeper writes it (see :func:`to_json`)."""
        return to_json(self.to_dict(), indent=indent)

    @classmethod
    def from_json(cls, text: str | bytes) -> Self:
        """Reads a message.

        Raises:
            MessageError: If it is not JSON or not a valid message of this kind; the path names the bad field.
        """
        return cls.from_dict(parse_json(text))


def child(path: str, key: str) -> str:
    """The JSON path of a field of the object at ``path``."""
    return f"{path}.{key}" if _SIMPLE_KEY.match(key) else f"{path}[{json.dumps(key)}]"


def item(path: str, index: int) -> str:
    """The JSON path of an element of the array at ``path``."""
    return f"{path}[{index}]"


def missing(path: str) -> MissingFieldError:
    """The error for a required field that is absent or null."""
    return MissingFieldError("is missing or null", path=path)


def expect_object(data: object, path: str = "$") -> Mapping[str, Any]:
    """Checks that a value is a JSON object.

    Raises:
        InvalidFieldError: If it is not.
    """
    if not isinstance(data, Mapping):
        raise InvalidFieldError(f"must be an object, got {_json_type(data)}", path=path)
    return data


def check_fields(data: Mapping[str, Any], allowed: Collection[str], path: str = "$") -> None:
    """Checks that an object has no fields beyond those allowed.

    Raises:
        UnknownFieldError: Naming the first unknown field.
    """
    for key in data:
        if key not in allowed:
            raise UnknownFieldError(
                f"unknown field; expected one of {', '.join(sorted(allowed))}", path=child(path, key)
            )


def check_text(value: str, path: str) -> str:
    """Checks that a string is valid Unicode (no lone surrogates, which JSON escapes can produce).

    Raises:
        InvalidFieldError: If it cannot be encoded as UTF-8.
    """
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidFieldError("is not valid Unicode text (lone surrogate)", path=path) from None
    return value


def string_value(value: object, path: str, *, allow_blank: bool = False) -> str:
    """Checks that a value is a string (non-blank unless allowed).

    Raises:
        MissingFieldError: If it is null.
        InvalidFieldError: If it is not a string, or is blank when that is not allowed.
    """
    if value is None:
        raise missing(path)
    if not isinstance(value, str):
        raise InvalidFieldError(f"must be a string, got {_json_type(value)}", path=path)
    if not allow_blank and not value.strip():
        raise InvalidFieldError("must not be blank", path=path)
    return check_text(value, path)


def required_str(data: Mapping[str, Any], key: str, path: str = "$", *, allow_blank: bool = False) -> str:
    """Reads a required string field.

    Raises:
        MissingFieldError: If it is absent or null.
        InvalidFieldError: If it is not a string, or is blank when that is not allowed.
    """
    return string_value(data.get(key), child(path, key), allow_blank=allow_blank)


def required_id(data: Mapping[str, Any], key: str, path: str = "$", *, what: str = "id") -> str:
    """Reads a required id that becomes part of a path or key: a string following ``paths.SAFE_ID_RULE``.

    Raises:
        MissingFieldError: If it is absent or null.
        InvalidFieldError: If it is not a string or is blank.
        UnsafeIdError: If it breaks the safe id rule.
    """
    return check_safe_id(required_str(data, key, path), where=child(path, key), what=what)


def optional_str(data: Mapping[str, Any], key: str, path: str = "$") -> str | None:
    """Reads an optional string field (absent or null gives None; blank is kept).

    Raises:
        InvalidFieldError: If it is present and not a string.
    """
    value = data.get(key)
    if value is None:
        return None
    return string_value(value, child(path, key), allow_blank=True)


def str_list(
    data: Mapping[str, Any], key: str, path: str = "$", *, non_empty: bool = False, allow_blank: bool = False
) -> tuple[str, ...]:
    """Reads a required list of strings; no element may be null.

    Raises:
        MissingFieldError: If the list is absent or null, or an element is null.
        InvalidFieldError: If it is not a list, an element is not a string or is blank, or it is empty when
            ``non_empty`` is set.
    """
    where = child(path, key)
    value = data.get(key)
    if value is None:
        raise missing(where)
    if not isinstance(value, list):
        raise InvalidFieldError(f"must be a list, got {_json_type(value)}", path=where)
    if non_empty and not value:
        raise InvalidFieldError("must not be empty", path=where)
    return tuple(string_value(v, item(where, i), allow_blank=allow_blank) for i, v in enumerate(value))


def optional_str_list(data: Mapping[str, Any], key: str, path: str = "$") -> tuple[str, ...] | None:
    """Reads an optional list of strings (absent or null gives None).

    Raises:
        MissingFieldError: If an element is null.
        InvalidFieldError: If it is not a list of strings.
    """
    if data.get(key) is None:
        return None
    return str_list(data, key, path)


def str_map(value: object, path: str) -> dict[str, str]:
    """Reads a JSON object of string values; numbers and booleans are read as their JSON text, as Gson does.

    Raises:
        InvalidFieldError: If it is not an object, or a value is not a string, number or boolean.
    """
    obj = expect_object(value, path)
    out: dict[str, str] = {}
    for k, v in obj.items():
        where = child(path, k)
        check_text(k, where)
        if isinstance(v, str):
            out[k] = check_text(v, where)
        elif isinstance(v, bool):
            out[k] = "true" if v else "false"
        elif isinstance(v, int | float):
            out[k] = json.dumps(v)
        else:
            raise InvalidFieldError(f"must be a string, got {_json_type(v)}", path=where)
    return out


def optional_str_map(data: Mapping[str, Any], key: str, path: str = "$") -> dict[str, str] | None:
    """Reads an optional object of string values (absent or null gives None).

    Raises:
        InvalidFieldError: If it is not an object of strings.
    """
    value = data.get(key)
    if value is None:
        return None
    return str_map(value, child(path, key))


def required_int(
    data: Mapping[str, Any], key: str, path: str = "$", *, minimum: int | None = None, maximum: int | None = None
) -> int:
    """Reads a required integer field within optional bounds.

    Raises:
        MissingFieldError: If it is absent or null.
        InvalidFieldError: If it is not an integer or is out of bounds.
    """
    where = child(path, key)
    value = data.get(key)
    if value is None:
        raise missing(where)
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidFieldError(f"must be an integer, got {_json_type(value)}", path=where)
    if (minimum is not None and value < minimum) or (maximum is not None and value > maximum):
        raise InvalidFieldError(f"{value} is out of range [{minimum}, {maximum}]", path=where)
    return value


def from_serde_error(
    error: SleeperError, path: str, error_type: type[MessageError] = InvalidFieldError
) -> MessageError:
    """Turns an error from a shared reader (region, partition, file reference, transaction) into a message error.

    Those readers put the path they were given at the start of their messages; where that is so the precise path is
    recovered, otherwise ``path`` is used.
    """
    message = str(error)
    where, reason = path, message
    if message.startswith(path):
        head, sep, rest = message.partition(" ")
        if sep:
            where, reason = head.rstrip(":"), rest
    return error_type(reason, path=where)


def lookup_schema(lookup: Schema | SchemaLookup, key: str, path: str, *, by: str = "id") -> Schema:
    """Finds the schema of the table a message names.

    Args:
        lookup: A fixed schema, or a function finding one by table id or name.
        key: The table id or name.
        path: The JSON path of the table id or name, named in errors.
        by: What ``key`` is ("id" or "name"), named in errors.

    Raises:
        UnknownTableError: If there is no such table.
    """
    if isinstance(lookup, Schema):
        return lookup
    try:
        schema = lookup(key)
    except TableNotFoundError:
        schema = None
    if schema is None:
        raise UnknownTableError(f"no table with {by} {key!r}", path=path)
    return schema


def _json_type(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, Mapping):
        return "an object"
    return type(value).__name__
