"""Partitions and the partition tree."""

from __future__ import annotations

import base64
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from sleeper.core.exceptions import PartitionTreeError, SerDeError
from sleeper.core.paths import check_safe_id
from sleeper.core.range import Range, Region
from sleeper.core.schema import Key, KeyValue, PrimitiveType, Schema

ROOT_ID = "root"
"""The id of the single partition of a table created without split points."""

IdSupplier = Callable[[], str]


def random_id() -> str:
    """A new random partition id (a UUID), as Sleeper gives every partition but a split-less root."""
    return str(uuid.uuid4())


@dataclass(frozen=True, slots=True, kw_only=True)
class Partition:
    """A node of the partition tree: a region of the row key space."""

    id: str
    parent_id: str | None
    child_ids: tuple[str, ...] = ()
    is_leaf: bool = True
    region: Region
    dimension: int = -1

    def to_dict(self, schema: Schema) -> dict[str, Any]:
        """Sleeper's partition JSON as a dictionary."""
        out: dict[str, Any] = {"partitionId": self.id, "isLeafPartition": self.is_leaf}
        if self.parent_id is not None:
            out["parentPartitionId"] = self.parent_id
        out["childPartitionIds"] = list(self.child_ids)
        out["region"] = self.region.to_dict(schema)
        out["dimension"] = self.dimension
        return out

    @classmethod
    def from_dict(cls, schema: Schema, data: object, *, path: str = "partition") -> Partition:
        """Reads Sleeper's partition JSON.

        Raises:
            SerDeError: If the document is not a valid partition (``UnsafeIdError`` for an id that breaks the safe id
                rule: partition ids name data directories).
        """
        if not isinstance(data, Mapping):
            raise SerDeError(f"{path} must be an object")
        pid = data.get("partitionId")
        if not isinstance(pid, str) or not pid:
            raise SerDeError(f"{path}.partitionId must be a non-empty string")
        check_safe_id(pid, where=f"{path}.partitionId", what="partition id")
        parent = data.get("parentPartitionId")
        if parent is not None and not isinstance(parent, str):
            raise SerDeError(f"{path}.parentPartitionId must be a string")
        children = data.get("childPartitionIds", [])
        if not isinstance(children, list) or not all(isinstance(c, str) for c in children):
            raise SerDeError(f"{path}.childPartitionIds must be a list of strings")
        is_leaf = data.get("isLeafPartition", not children)
        if not isinstance(is_leaf, bool):
            raise SerDeError(f"{path}.isLeafPartition must be a boolean")
        dimension = data.get("dimension", -1)
        if isinstance(dimension, bool) or not isinstance(dimension, int):
            raise SerDeError(f"{path}.dimension must be an integer")
        region = Region.from_dict(schema, data.get("region", {}), path=f"{path}.region")
        # Sleeper's partition regions cover every row key field.
        full = {f.name: region.ranges.get(f.name) or Range.whole(f) for f in schema.row_key_fields}
        return cls(
            id=pid,
            parent_id=parent,
            child_ids=tuple(children),
            is_leaf=is_leaf,
            region=Region(full),
            dimension=dimension,
        )


class PartitionTree:
    """An immutable view of all partitions of a table, with lookups.

    Args:
        schema: The table schema.
        partitions: Every partition of the table.

    Raises:
        PartitionTreeError: If there is not exactly one root.
    """

    def __init__(self, schema: Schema, partitions: Iterable[Partition]) -> None:
        self.schema = schema
        self._by_id: dict[str, Partition] = {p.id: p for p in partitions}
        roots = [p for p in self._by_id.values() if p.parent_id is None]
        if len(roots) != 1:
            raise PartitionTreeError(f"partition tree must have exactly one root, found {len(roots)}")
        self.root = roots[0]

    def __len__(self) -> int:
        return len(self._by_id)

    def __iter__(self) -> Iterator[Partition]:
        return iter(self._by_id.values())

    def __contains__(self, partition_id: object) -> bool:
        return partition_id in self._by_id

    def not_held(self, partition_ids: Iterable[str]) -> list[str]:
        """The partitions named (repeats are fine) that the tree does not hold, sorted, each once.

        A planner of reads by leaf partition checks the partitions its file references are on with this: a reference
        on a partition outside the tree is reached by no leaf, so its rows would be left out
        (:func:`references_outside_tree_message` says so in one line).
        """
        return sorted({partition_id for partition_id in partition_ids if partition_id not in self._by_id})

    def get(self, partition_id: str) -> Partition:
        """The partition with an id.

        Raises:
            PartitionTreeError: If there is no such partition.
        """
        try:
            return self._by_id[partition_id]
        except KeyError:
            raise PartitionTreeError(f"no partition with id {partition_id!r}") from None

    @property
    def partitions(self) -> list[Partition]:
        """All partitions."""
        return list(self._by_id.values())

    @property
    def leaves(self) -> list[Partition]:
        """The leaf partitions, in key order of the first row key (depth-first, left to right)."""
        out: list[Partition] = []
        stack = [self.root]
        while stack:
            p = stack.pop()
            if p.is_leaf:
                out.append(p)
            else:
                stack.extend(self._by_id[c] for c in reversed(p.child_ids))
        return out

    def children(self, partition_id: str) -> list[Partition]:
        """The children of a partition, left then right."""
        return [self._by_id[c] for c in self.get(partition_id).child_ids]

    def ancestors(self, partition_id: str) -> list[Partition]:
        """The ancestors of a partition, nearest first, ending at the root."""
        out: list[Partition] = []
        p = self.get(partition_id)
        while p.parent_id is not None:
            p = self.get(p.parent_id)
            out.append(p)
        return out

    def descendants(self, partition_id: str) -> list[Partition]:
        """Every partition below a partition."""
        out: list[Partition] = []
        stack = list(self.children(partition_id))
        while stack:
            p = stack.pop()
            out.append(p)
            stack.extend(self.children(p.id))
        return out

    def leaf_for_key(self, key: Key | Mapping[str, object] | Sequence[object]) -> Partition:
        """The leaf partition holding a row key (values in row key order, or a mapping by name)."""
        values = self.schema.row_key(key)
        p = self.root
        while not p.is_leaf:
            for child in self.children(p.id):
                if child.region.contains(self.schema, values):
                    p = child
                    break
            else:
                raise PartitionTreeError(f"no child of partition {p.id!r} holds key {values!r}")
        return p

    def leaves_overlapping(self, region: Region) -> list[Partition]:
        """The leaf partitions overlapping a region, in key order."""
        out: list[Partition] = []
        stack = [self.root]
        while stack:
            p = stack.pop()
            if not p.region.overlaps(region):
                continue
            if p.is_leaf:
                out.append(p)
            else:
                stack.extend(self._by_id[c] for c in reversed(p.child_ids))
        return out

    def validate(self) -> None:
        """Checks the whole tree.

        Raises:
            PartitionTreeError: Naming the first problem found.
        """
        seen: set[str] = set()
        stack = [self.root]
        for f in self.schema.row_key_fields:
            r = self.root.region.range(f.name)
            if r is None or r.canonical_min != f.primitive_type.minimum or r.canonical_max is not None:
                raise PartitionTreeError(f"root partition {self.root.id!r} must cover all values of {f.name!r}")
        while stack:
            p = stack.pop()
            if p.id in seen:
                raise PartitionTreeError(f"partition {p.id!r} is reachable twice")
            seen.add(p.id)
            if p.is_leaf:
                if p.child_ids:
                    raise PartitionTreeError(f"leaf partition {p.id!r} has children")
                continue
            _check_split(self.schema, p, [self._child(p, c) for c in p.child_ids])
            stack.extend(self._by_id[c] for c in p.child_ids)
        unlinked = set(self._by_id) - seen
        if unlinked:
            raise PartitionTreeError(f"partitions not linked to the root: {', '.join(sorted(unlinked))}")

    def _child(self, parent: Partition, child_id: str) -> Partition:
        child = self._by_id.get(child_id)
        if child is None:
            raise PartitionTreeError(f"partition {parent.id!r} has missing child {child_id!r}")
        if child.parent_id != parent.id:
            raise PartitionTreeError(f"partition {child_id!r} does not name {parent.id!r} as its parent")
        return child


def _check_split(schema: Schema, parent: Partition, children: Sequence[Partition]) -> None:
    """Checks that two children split a parent at one point on its dimension."""
    if len(children) != 2:
        raise PartitionTreeError(f"partition {parent.id!r} must have 2 children, has {len(children)}")
    if not 0 <= parent.dimension < len(schema.row_key_fields):
        raise PartitionTreeError(f"partition {parent.id!r} has invalid split dimension {parent.dimension}")
    left, right = children
    dim_name = schema.row_key_fields[parent.dimension].name
    for f in schema.row_key_fields:
        pr, lr, rr = (x.region.range(f.name) for x in (parent, left, right))
        if pr is None or lr is None or rr is None:
            raise PartitionTreeError(f"partitions under {parent.id!r} must constrain every row key")
        if f.name != dim_name:
            if lr.canonical() != pr.canonical() or rr.canonical() != pr.canonical():
                raise PartitionTreeError(f"children of {parent.id!r} must keep the parent's range on {f.name!r}")
            continue
        if lr.canonical_min != pr.canonical_min:
            raise PartitionTreeError(f"left child {left.id!r} must start where parent {parent.id!r} starts")
        if rr.canonical_max != pr.canonical_max:
            raise PartitionTreeError(f"right child {right.id!r} must end where parent {parent.id!r} ends")
        if lr.canonical_max is None or lr.canonical_max != rr.canonical_min:
            raise PartitionTreeError(f"children of {parent.id!r} must meet at one point on {f.name!r}")
        if not pr.canonical_min < lr.canonical_max:  # type: ignore[operator]
            raise PartitionTreeError(f"split point of {parent.id!r} must lie inside the parent")
        if pr.canonical_max is not None and not lr.canonical_max < pr.canonical_max:  # type: ignore[operator]
            raise PartitionTreeError(f"split point of {parent.id!r} must lie inside the parent")


def validate_split(schema: Schema, parent: Partition, children: Sequence[Partition]) -> None:
    """Checks that children correctly split a (non-leaf) parent: two children meeting at a point on its dimension.

    Raises:
        PartitionTreeError: If the split is invalid.
    """
    if parent.is_leaf:
        raise PartitionTreeError(f"split parent {parent.id!r} must not be a leaf")
    if tuple(c.id for c in children) != parent.child_ids:
        raise PartitionTreeError(f"children of {parent.id!r} must be {list(parent.child_ids)}, in order")
    for c in children:
        if c.parent_id != parent.id:
            raise PartitionTreeError(f"partition {c.id!r} must name {parent.id!r} as its parent")
    _check_split(schema, parent, children)


def split_partition(
    schema: Schema,
    parent: Partition,
    dimension: int,
    split_point: KeyValue,
    *,
    id_supplier: IdSupplier = random_id,
) -> tuple[Partition, Partition, Partition]:
    """Splits a leaf into two children at a point on one row key dimension.

    Returns:
        The new parent (no longer a leaf), the left child [min, point) and the right child [point, max).

    Raises:
        PartitionTreeError: If the parent is not a leaf or the point does not lie strictly inside it.
    """
    if not parent.is_leaf:
        raise PartitionTreeError(f"partition {parent.id!r} is not a leaf")
    f = schema.row_key_fields[dimension]
    r = parent.region.range(f.name) or Range.whole(f)
    point = f.primitive_type.check(split_point, f.name)
    high = r.canonical_max
    if not (r.canonical_min < point and (high is None or point < high)):  # type: ignore[operator]
        raise PartitionTreeError(f"split point {point!r} does not lie strictly inside partition {parent.id!r}")
    left_id, right_id = id_supplier(), id_supplier()
    base = dict(parent.region.ranges)
    left = Partition(
        id=left_id,
        parent_id=parent.id,
        region=Region({**base, f.name: Range(field=f, min=r.canonical_min, max=point)}),
    )
    right = Partition(
        id=right_id,
        parent_id=parent.id,
        region=Region({**base, f.name: Range(field=f, min=point, max=high)}),
    )
    new_parent = replace(parent, is_leaf=False, child_ids=(left_id, right_id), dimension=dimension)
    return new_parent, left, right


def partitions_from_split_points(
    schema: Schema,
    split_points: Sequence[KeyValue],
    *,
    id_supplier: IdSupplier = random_id,
) -> list[Partition]:
    """Builds the initial partition tree of a table as Sleeper does.

    With no split points there is one leaf with id ``root``. Otherwise the leaves are [min, s1) ... [sn, +inf) on
    the first row key; parents are built bottom-up pairing neighbours left to right (an odd last node is promoted),
    split on dimension 0, and every partition gets a random id.

    Raises:
        PartitionTreeError: If the split points are not strictly increasing or of the wrong type.
    """
    f = schema.row_key_fields[0]
    whole = Region.whole(schema)
    if not split_points:
        return [Partition(id=ROOT_ID, parent_id=None, region=whole)]
    points = [f.primitive_type.check(p, f.name) for p in split_points]
    for a, b in zip(points, points[1:], strict=False):
        if not a < b:  # type: ignore[operator]
            raise PartitionTreeError(f"split points must be strictly increasing: {a!r} is not below {b!r}")
    if points[0] == f.primitive_type.minimum:
        raise PartitionTreeError(f"split point {points[0]!r} is the minimum value of {f.name!r}")
    bounds: list[KeyValue | None] = [f.primitive_type.minimum, *points, None]
    level: list[Partition] = []
    for low, high in zip(bounds, bounds[1:], strict=False):
        assert low is not None
        region = Region({**whole.ranges, f.name: Range(field=f, min=low, max=high)})
        level.append(Partition(id=id_supplier(), parent_id=None, region=region))
    done: list[Partition] = []
    while len(level) > 1:
        next_level: list[Partition] = []
        for i in range(0, len(level) - 1, 2):
            left, right = level[i], level[i + 1]
            lr, rr = left.region.ranges[f.name], right.region.ranges[f.name]
            parent = Partition(
                id=id_supplier(),
                parent_id=None,
                child_ids=(left.id, right.id),
                is_leaf=False,
                region=Region({**whole.ranges, f.name: Range(field=f, min=lr.min, max=rr.max)}),
                dimension=0,
            )
            done.extend([replace(left, parent_id=parent.id), replace(right, parent_id=parent.id)])
            next_level.append(parent)
        if len(level) % 2 == 1:
            next_level.append(level[-1])
        level = next_level
    done.append(level[0])
    return done


def write_split_points(schema: Schema, points: Iterable[KeyValue], *, strings_base64: bool = False) -> list[str]:
    """The lines of a split points file that :func:`read_split_points` reads back as the same points: integers in
    decimal, byte arrays base64, strings raw or (``strings_base64``) base64.

    Raises:
        PartitionTreeError: If a string is to be written raw but would not read back as itself: it holds a line
            break (a newline, a carriage return, or another character that ends a line) or is blank.
    """
    field = schema.row_key_fields[0]
    ptype = field.primitive_type
    lines: list[str] = []
    for number, point in enumerate(points, start=1):
        value = ptype.check(point, field.name)
        if isinstance(value, bytes):
            lines.append(base64.b64encode(value).decode("ascii"))
        elif isinstance(value, int):
            lines.append(str(value))
        elif strings_base64:
            lines.append(base64.b64encode(value.encode("utf-8")).decode("ascii"))
        elif value.splitlines() != [value] or not value.strip():
            raise PartitionTreeError(
                f"split point {number} ({value!r}) holds a line break or is blank, so it cannot be written one per "
                "line as it is: write string split points base64-encoded"
            )
        else:
            lines.append(value)
    return lines


def read_split_points(schema: Schema, lines: Iterable[str], *, strings_base64: bool = False) -> list[KeyValue]:
    """Reads a split points file: one value per line; strings raw or base64, byte arrays base64.

    Raises:
        PartitionTreeError: If a line is not a value of the first row key's type.
    """
    f = schema.row_key_fields[0]
    ptype = f.primitive_type
    out: list[KeyValue] = []
    for number, raw in enumerate(lines, start=1):
        line = raw.rstrip("\r\n")
        if not line.strip():
            continue
        try:
            if ptype in (PrimitiveType.INT, PrimitiveType.LONG):
                out.append(ptype.check(int(line.strip()), f.name))
            elif ptype is PrimitiveType.STRING:
                out.append(base64.b64decode(line, validate=True).decode("utf-8") if strings_base64 else line)
            else:
                out.append(base64.b64decode(line, validate=True))
        except (ValueError, UnicodeDecodeError) as e:
            raise PartitionTreeError(
                f"split points line {number}: {line!r} is not a valid {ptype.value}: {e}"
            ) from None
    return out


def references_outside_tree_message(table_id: str, partition_ids: Sequence[str]) -> str:
    """Why reads of a table planned by partition are refused when its files are referenced on partitions its tree
    does not hold (:meth:`PartitionTree.not_held`), and what to do; every door planning by partition says this."""
    shown = ", ".join(partition_ids[:5]) + (f" and {len(partition_ids) - 5} more" if len(partition_ids) > 5 else "")
    return (
        f"table {table_id} has files referenced on partitions its partition tree does not hold ({shown}): a plan "
        "by partition would leave out their rows, so nothing is read. The files and partitions read do not fit "
        "together: a `table reinit` running, or stopped between its two steps, leaves this; try again, and if "
        "it persists run the reinit again"
    )
