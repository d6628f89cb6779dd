"""Errors raised when reading and writing data files."""

from __future__ import annotations

from sleeper.core import SleeperError


class UnsupportedLocationError(SleeperError):
    """A URI names a scheme no filesystem is known for."""


class MissingFileError(SleeperError, FileNotFoundError):
    """A file does not exist. Also a ``FileNotFoundError``, so either can be caught."""


class SchemaMismatchError(SleeperError):
    """Data does not match the table schema: a column is missing, has the wrong type, or a required one holds nulls.

    The message names the file (when there is one) and the column.
    """


class DataFileError(SleeperError):
    """A data file cannot be read as a Sleeper Parquet file: it is corrupt, truncated or not Parquet."""


class InputFileError(DataFileError):
    """An input file of a job (ingest) cannot be read or decoded: it is corrupt, truncated or not Parquet.

    The message names the file and, when they are known, the row group and the column that cannot be decoded.
    """


class UnsupportedSettingError(SleeperError):
    """A Parquet writer setting cannot be honoured by pyarrow (such as the ``lzo`` codec)."""


class WriterClosedError(SleeperError, RuntimeError):
    """A file writer was used after it was closed or failed, or its result was asked for before it was closed."""


class UnsafeDeleteError(SleeperError):
    """A delete was refused: the path does not lie under the data prefix of the table it was deleted for."""


class DataEngineError(SleeperError):
    """A table's data engine (``sleeper.table.data.engine``) cannot be used: its name is not an engine, or the engine
    cannot run here (:class:`EngineUnavailableError`)."""


class EngineUnavailableError(DataEngineError):
    """The data engine asked for cannot be used here (its package is not installed, or a file is out of its reach)."""
