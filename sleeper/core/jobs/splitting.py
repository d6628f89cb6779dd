"""Partition split jobs: the message from the split finder to the splitter.

Wire JSON: ``{"tableId", "filenames": […], "partition": P}``, with ``P`` Sleeper's partition JSON. Reading the
partition needs the table's schema, so readers take a schema, or a lookup by table id that is called with the id
read from the message.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from sleeper.core.exceptions import SleeperError
from sleeper.core.jobs import wire
from sleeper.core.partition import Partition
from sleeper.core.paths import check_safe_path
from sleeper.core.schema import Schema

SPLIT_PARTITION_JOB_FIELDS = frozenset({"tableId", "filenames", "partition"})
"""The fields of a partition split job."""

_PARTITION_KEY_ORDER = (
    "partitionId",
    "isLeafPartition",
    "parentPartitionId",
    "childPartitionIds",
    "region",
    "dimension",
)
_PARTITION_FIELDS = frozenset(_PARTITION_KEY_ORDER)


@dataclass(frozen=True, slots=True, kw_only=True)
class SplitPartitionJob:
    """A request to split a leaf partition at the median of its files' sketches.

    Attributes:
        table_id: The table.
        partition: The partition to split, as the finder saw it.
        filenames: The files whose sketches are used to find the split point.
    """

    table_id: str
    partition: Partition
    filenames: tuple[str, ...]

    def __post_init__(self) -> None:
        object.__setattr__(self, "filenames", tuple(self.filenames))

    @classmethod
    def of(cls, table_id: str, partition: Partition, filenames: Iterable[str]) -> SplitPartitionJob:
        """A split job."""
        return cls(table_id=table_id, partition=partition, filenames=tuple(filenames))

    def to_dict(self, schema: Schema) -> dict[str, Any]:
        """Sleeper's split job JSON as a dictionary.

        As in Sleeper, whose split job serde writes nulls, a root's ``parentPartitionId`` and an unbounded range's
        ``max`` are written as null rather than left out.
        """
        return {
            "tableId": self.table_id,
            "filenames": list(self.filenames),
            "partition": _with_nulls(self.partition.to_dict(schema)),
        }

    def to_json(self, schema: Schema, *, indent: int | None = None) -> str:
        """Sleeper's split job JSON."""
        return wire.to_json(self.to_dict(schema), indent=indent)

    @classmethod
    def from_json(cls, text: str | bytes, schema: Schema | wire.SchemaLookup) -> SplitPartitionJob:
        """Reads a split job message.

        Args:
            text: The message body.
            schema: The table's schema, or a lookup of the schema by table id.

        Raises:
            MessageError: If it is not a valid split job (``UnknownTableError`` if the lookup finds no table).
        """
        return cls.from_dict(wire.parse_json(text), schema)

    @classmethod
    def from_dict(cls, data: object, schema: Schema | wire.SchemaLookup) -> SplitPartitionJob:
        """Reads a parsed split job message (see ``from_json``).

        Raises:
            MessageError: If it is not a valid split job.
        """
        obj = wire.expect_object(data)
        wire.check_fields(obj, SPLIT_PARTITION_JOB_FIELDS)
        table_id = wire.required_str(obj, "tableId")
        filenames = wire.str_list(obj, "filenames")
        for i, name in enumerate(filenames):
            check_safe_path(name, where=f"$.filenames[{i}]", allow_local=True)
        raw = obj.get("partition")
        if raw is None:
            raise wire.missing("$.partition")
        wire.check_fields(wire.expect_object(raw, "$.partition"), _PARTITION_FIELDS, "$.partition")
        table_schema = wire.lookup_schema(schema, table_id, "$.tableId")
        try:
            partition = Partition.from_dict(table_schema, raw, path="$.partition")
        except SleeperError as e:
            raise wire.from_serde_error(e, "$.partition") from None
        return cls(table_id=table_id, partition=partition, filenames=filenames)


def _with_nulls(partition: dict[str, Any]) -> dict[str, Any]:
    out = {key: partition.get(key) for key in _PARTITION_KEY_ORDER}
    region: dict[str, Any] = {}
    for name, item in partition["region"].items():
        if isinstance(item, dict):
            item = {k: item.get(k) for k in ("min", "minInclusive", "max", "maxInclusive")}
        region[name] = item
    out["region"] = region
    return out
