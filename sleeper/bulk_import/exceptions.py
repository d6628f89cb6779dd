"""Errors of bulk import."""

from __future__ import annotations

from sleeper.core import SleeperError

__all__ = ["BulkImportConfigError", "BulkImportError", "InsufficientDataForSplittingError", "SparkUnavailableError"]


class BulkImportError(SleeperError):
    """A bulk import could not read, write or commit its data."""


class BulkImportConfigError(BulkImportError):
    """A setting that bulk import uses is invalid."""


class SparkUnavailableError(BulkImportError):
    """PySpark is not installed (the ``spark`` extra installs it: ``sleeper.core.extras.install_command``)."""


class InsufficientDataForSplittingError(BulkImportError):
    """The input holds too few rows or distinct keys to extend the partition tree to the minimum number of leaves.

    Attributes:
        min_leaf_partitions: The leaves the table needs.
        max_leaf_partitions: The most leaves the data allowed.
    """

    def __init__(self, min_leaf_partitions: int, max_leaf_partitions: int) -> None:
        super().__init__(
            f"Required {min_leaf_partitions} minimum leaf partitions. Unable to reach more than "
            f"{max_leaf_partitions} leaf partitions based on the given data. Either there are not enough unique "
            "values for the row key fields, or not enough data was provided."
        )
        self.min_leaf_partitions = min_leaf_partitions
        self.max_leaf_partitions = max_leaf_partitions
