"""A table's metrics from its state store, as Sleeper's table metrics Lambda computes them (``TableMetrics``).

Sleeper publishes per table, with dimensions ``instanceId`` and ``tableName``: ``ActiveFileCount`` (file
references), ``RecordCount`` (rows over the references), ``PartitionCount``, ``LeafPartitionCount`` and
``AverageActiveFilesPerPartition`` (references per partition holding any). This port adds ``FileCount`` (files
tracked, referenced or not), ``UnreferencedFileCount`` (files awaiting garbage collection) and the minimum and maximum
references per partition, which Sleeper's code leaves as a to-do.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Protocol

from sleeper.core import naming
from sleeper.statestore.store import StateStore
from sleeper.statestore.tables import SleeperInstance

__all__ = ["MetricsRuntime", "TableMetrics", "handle_table_metrics", "table_metrics"]


@dataclass(frozen=True, slots=True, kw_only=True)
class TableMetrics:
    """The metrics of one table at one moment.

    Attributes:
        instance_id: The instance.
        table_name: The table.
        file_reference_count: File references (Sleeper's ``ActiveFileCount``).
        row_count: Rows over every reference (Sleeper's ``RecordCount``; approximate counts included as recorded).
        partition_count: Partitions in the tree.
        leaf_partition_count: Leaf partitions.
        file_count: Files tracked, with or without references.
        unreferenced_file_count: Files with no references (awaiting garbage collection).
        average_references_per_partition: References per partition holding any (0 when there are none).
        min_references_per_partition: Fewest references on a partition holding any (0 when there are none).
        max_references_per_partition: Most references on one partition.
    """

    instance_id: str
    table_name: str
    file_reference_count: int
    row_count: int
    partition_count: int
    leaf_partition_count: int
    file_count: int
    unreferenced_file_count: int
    average_references_per_partition: float
    min_references_per_partition: int
    max_references_per_partition: int

    def values(self) -> dict[str, float]:
        """Each metric by its CloudWatch name (Sleeper's names first: ``sleeper.core.naming.TABLE_METRICS``)."""
        values = (
            self.file_reference_count,
            self.row_count,
            self.partition_count,
            self.leaf_partition_count,
            self.average_references_per_partition,
            self.min_references_per_partition,
            self.max_references_per_partition,
            self.file_count,
            self.unreferenced_file_count,
        )
        return dict(zip(naming.TABLE_METRICS, values, strict=True))


def table_metrics(instance_id: str, table_name: str, store: StateStore) -> TableMetrics:
    """Reads a table's state (brought up to date first) and computes its metrics."""
    store.refresh()
    files = store.files()
    references = [r for f in files for r in f.references.values()]
    per_partition = Counter(r.partition_id for r in references)
    partitions = store.partitions()
    counts = list(per_partition.values())
    return TableMetrics(
        instance_id=instance_id,
        table_name=table_name,
        file_reference_count=len(references),
        row_count=sum(r.number_of_rows for r in references),
        partition_count=len(partitions),
        leaf_partition_count=sum(1 for p in partitions if p.is_leaf),
        file_count=len(files),
        unreferenced_file_count=sum(1 for f in files if not f.references),
        average_references_per_partition=(sum(counts) / len(counts)) if counts else 0.0,
        min_references_per_partition=min(counts, default=0),
        max_references_per_partition=max(counts, default=0),
    )


class MetricsRuntime(SleeperInstance, Protocol):
    """The instance the table metrics entry runs in (an instance on AWS): the shared instance port, its id, and where
    metrics are published (CloudWatch, through embedded metric format log lines)."""

    @property
    def instance_id(self) -> str:
        """The instance's id (a dimension of every metric)."""
        ...

    def publish_table_metrics(self, metrics: TableMetrics) -> None:
        """Publishes a table's metrics."""
        ...


def handle_table_metrics(instance: MetricsRuntime, body: str) -> str:
    """One ``MetricsJobQ.fifo`` message (body: the table id): computes the table's metrics and publishes them.

    Returns:
        An empty line (the published metrics are the record).

    Raises:
        TableNotFoundError: If there is no such table (the message is dropped).
    """
    table = instance.table_by_id(body.strip())
    instance.publish_table_metrics(table_metrics(instance.instance_id, table.name, table.state_store))
    return ""
