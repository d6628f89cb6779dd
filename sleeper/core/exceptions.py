"""Errors raised by the Sleeper domain. Every error the project raises derives from SleeperError."""

from __future__ import annotations


class SleeperError(Exception):
    """Base class of every error raised by Sleeper."""


class SchemaError(SleeperError):
    """A schema is invalid; the message names the offending field."""


class KeyTypeError(SleeperError):
    """A key value does not match the type of its field."""


class RangeError(SleeperError):
    """A range or region is invalid."""


class PartitionTreeError(SleeperError):
    """A partition tree is invalid or an operation on it is impossible."""


class SerDeError(SleeperError):
    """A JSON document could not be read; the message names the path of the bad value."""


class PropertyError(SleeperError):
    """A property is unknown or its value is invalid."""


class InstanceNotFoundError(SleeperError):
    """No Sleeper instance is where one was named: a directory holding no ``instance.properties``, or an instance id
    whose config bucket holds none."""


class InstanceAlreadyExistsError(SleeperError):
    """An instance was to be created where one already is."""


class TableNotFoundError(SleeperError):
    """No table exists with the given name or id. Made with :meth:`of`, so every runtime, job tracker and command says
    it in the same words (``Table not found with name 'x'``, as Sleeper's own message)."""

    @classmethod
    def of(cls, *, table_name: str | None = None, table_id: str | None = None) -> TableNotFoundError:
        """The error for a table looked up by id (if given) or by name."""
        if table_id is not None:
            return cls(f"Table not found with id {table_id!r}")
        return cls(f"Table not found with name {table_name!r}")


class TableAlreadyExistsError(SleeperError):
    """A table with the given name already exists."""
