"""Which algorithm a bulk import job runs: ``sleeper.bulk.import.class.name``, or the job's ``className``.

Sleeper names a Java driver class; this port runs its own PySpark algorithms and maps Sleeper's class names to them:

* :attr:`BulkImportAlgorithm.LOCAL_SORT` (``local-sort``, the default): rows are tagged with their leaf, shuffled to
  exactly one Spark partition per leaf, and each partition is sorted in its Python worker with this port's vectorised
  sort. Sleeper's ``BulkImportDataframeLocalSortDriver`` (its default) and ``BulkImportJobRDDDriver`` both partition
  one Spark partition per leaf and sort within it, so both map here.
* :attr:`BulkImportAlgorithm.DATAFRAME_SORT` (``dataframe-sort``): rows are tagged with their leaf and sorted by leaf
  then keys with Spark's own DataFrame sort in the JVM (range partitioned), as Sleeper's
  ``BulkImportJobDataframeDriver`` does; a leaf spanning several Spark partitions is written as several files.

Both give each leaf the same rows in the same key order (rows with equal keys may come in either order, as in
Sleeper). Any other name is refused: a job naming one is rejected when it is validated, and an instance property
naming one is refused when the properties are set or loaded.
"""

from __future__ import annotations

from enum import Enum

from sleeper.core.exceptions import SleeperError

__all__ = [
    "ALGORITHM_NAMES",
    "DEFAULT_CLASS_NAME",
    "SLEEPER_DRIVER_CLASSES",
    "BulkImportAlgorithm",
    "UnknownBulkImportAlgorithmError",
    "bulk_import_algorithm",
]


class BulkImportAlgorithm(Enum):
    """The bulk import algorithms this port offers, by the names a property or job may give them."""

    LOCAL_SORT = "local-sort"
    """One Spark partition per leaf, sorted in the Python worker (this port's vectorised sort)."""
    DATAFRAME_SORT = "dataframe-sort"
    """Spark's DataFrame sort by leaf then keys in the JVM (range partitioned)."""


DEFAULT_CLASS_NAME = "sleeper.bulkimport.runner.dataframelocalsort.BulkImportDataframeLocalSortDriver"
"""Sleeper's default for ``sleeper.bulk.import.class.name``."""

SLEEPER_DRIVER_CLASSES: dict[str, BulkImportAlgorithm] = {
    DEFAULT_CLASS_NAME: BulkImportAlgorithm.LOCAL_SORT,
    "sleeper.bulkimport.runner.rdd.BulkImportJobRDDDriver": BulkImportAlgorithm.LOCAL_SORT,
    "sleeper.bulkimport.runner.dataframe.BulkImportJobDataframeDriver": BulkImportAlgorithm.DATAFRAME_SORT,
}
"""Sleeper's Spark driver classes and the algorithm of this port each runs as."""

ALGORITHM_NAMES: tuple[str, ...] = (*(a.value for a in BulkImportAlgorithm), *SLEEPER_DRIVER_CLASSES)
"""Every name accepted (exactly as spelled: Java class names are case-sensitive)."""


class UnknownBulkImportAlgorithmError(SleeperError):
    """A bulk import class name that names none of this port's algorithms."""


def bulk_import_algorithm(name: str, *, source: str = "className") -> BulkImportAlgorithm:
    """The algorithm a class name (Sleeper's) or algorithm name (this port's) selects.

    Args:
        name: The name, as given.
        source: Where the name came from, for the error (``className`` or the property's name).

    Raises:
        UnknownBulkImportAlgorithmError: If the name is not one of :data:`ALGORITHM_NAMES`.
    """
    for algorithm in BulkImportAlgorithm:
        if name == algorithm.value:
            return algorithm
    found = SLEEPER_DRIVER_CLASSES.get(name)
    if found is None:
        raise UnknownBulkImportAlgorithmError(
            f"{source} {name!r} is not a bulk import algorithm this port runs: use one of {', '.join(ALGORITHM_NAMES)}"
        )
    return found
