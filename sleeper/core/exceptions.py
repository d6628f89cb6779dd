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


class TableNotFoundError(SleeperError):
    """No table exists with the given name or id."""


class TableAlreadyExistsError(SleeperError):
    """A table with the given name already exists."""
