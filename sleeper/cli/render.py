"""Report data (plain dictionaries, also printed as JSON) and their rich renderings."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from rich.panel import Panel
from rich.table import Table
from rich.tree import Tree

from sleeper.core import counted

if TYPE_CHECKING:
    from sleeper.api import Table as SleeperTable
    from sleeper.core import Partition, Range, TableStatus
    from sleeper.core.properties import TableProperties


def _bound(value: object) -> str:
    if isinstance(value, bytes):
        return "0x" + value.hex()
    return repr(value)


def range_text(r: Range) -> str:
    """A range as text, e.g. ``['a', 'm')``."""
    low = "[" if r.min_inclusive else "("
    high = "∞)" if r.max is None else _bound(r.max) + ("]" if r.max_inclusive else ")")
    return f"{low}{_bound(r.min)}, {high}"


def region_text(partition: Partition) -> str:
    """A partition's region as text, one range per row key."""
    return " ".join(f"{name} {range_text(r)}" for name, r in partition.region.ranges.items())


def tables_table(tables: list[TableStatus], rows: Mapping[str, int]) -> Table:
    """The table list, with the rows referenced by each table (by table id)."""
    out = Table(title="Tables")
    out.add_column("Name", style="bold")
    out.add_column("Id")
    out.add_column("Online")
    out.add_column("Rows", justify="right")
    for t in tables:
        out.add_row(t.table_name, t.table_id, "yes" if t.online else "no", f"{rows.get(t.table_id, 0):,}")
    return out


def properties_table(title: str, values: Mapping[str, str]) -> Table:
    """Properties as a two-column table."""
    out = Table(title=title)
    out.add_column("Property", style="bold", overflow="fold")
    out.add_column("Value", overflow="fold")
    for key, value in values.items():
        out.add_row(key, value)
    return out


def effective_table_properties(properties: TableProperties) -> dict[str, str]:
    """Every table property with its effective value (set, instance default or built-in default)."""
    out: dict[str, str] = {}
    for definition in properties.definitions():
        value = properties.get(definition.name)
        if value is not None:
            out[definition.name] = value
    return out


def partitions_report(table: SleeperTable[Any]) -> list[dict[str, Any]]:
    """One entry per partition: id, parent, children, leaf, region, references and known rows."""
    refs_by_partition: dict[str, list[int]] = {}
    for ref in table.file_references():
        refs_by_partition.setdefault(ref.partition_id, []).append(ref.number_of_rows)
    tree = table.state_store.partition_tree()
    out = []
    for p in [tree.root, *tree.descendants(tree.root.id)]:
        rows = refs_by_partition.get(p.id, [])
        out.append(
            {
                "partitionId": p.id,
                "parentPartitionId": p.parent_id,
                "childPartitionIds": list(p.child_ids),
                "isLeafPartition": p.is_leaf,
                "dimension": p.dimension,
                "region": region_text(p),
                "fileReferences": len(rows),
                "rows": sum(rows),
            }
        )
    return out


def partitions_tree(table: SleeperTable[Any], report: list[dict[str, Any]]) -> Tree:
    """The partition tree as a rich tree."""
    by_id = {r["partitionId"]: r for r in report}

    def label(entry: dict[str, Any]) -> str:
        kind = "leaf" if entry["isLeafPartition"] else f"split on dimension {entry['dimension']}"
        return (
            f"[bold]{entry['partitionId']}[/] {entry['region']} — {kind}, "
            f"{counted(entry['fileReferences'], 'file reference')}, {counted(entry['rows'], 'row')}"
        )

    root = report[0]
    tree = Tree(label(root))
    stack = [(root, tree)]
    while stack:
        entry, node = stack.pop()
        for child_id in entry["childPartitionIds"]:
            child = by_id[child_id]
            stack.append((child, node.add(label(child))))
    return tree


def table_summary(table: SleeperTable[Any]) -> dict[str, Any]:
    """A table's identity, schema and state in numbers; ``portOnlyTypes: true`` only for a table whose value fields use
    types Sleeper does not have (``Schema.uses_port_only_types``) and ``upsert: true`` only for a table keeping one row
    per row key (``sleeper.table.upsert``), both readable by this port only, so other tables' summaries are
    unchanged."""
    refs = table.file_references()
    summary: dict[str, Any] = {
        "tableName": table.name,
        "tableId": table.table_id,
        "online": table.status.online,
        "schema": table.schema.to_dict(),
        "partitions": len(table.partitions()),
        "leafPartitions": len(table.leaf_partitions()),
        "files": len({r.filename for r in refs}),
        "fileReferences": len(refs),
        "rows": sum(r.number_of_rows for r in refs),
    }
    if table.schema.uses_port_only_types:
        summary["portOnlyTypes"] = True
    from sleeper.iterators import table_upserts

    if table_upserts(table.properties):
        summary["upsert"] = True
    return summary


def summary_panel(summary: dict[str, Any]) -> Panel:
    """A table summary as a panel."""
    fields = ", ".join(
        f"{f['name']}:{f['type'] if isinstance(f['type'], str) else next(iter(f['type']))}"
        for group in ("rowKeyFields", "sortKeyFields", "valueFields")
        for f in summary["schema"][group]
    )
    lines = [
        f"id {summary['tableId']} — {'online' if summary['online'] else 'offline'}",
        f"fields: {fields}",
        f"{counted(summary['partitions'], 'partition')} ({counted(summary['leafPartitions'], 'leaf', 'leaves')}), "
        f"{counted(summary['files'], 'file')}, {counted(summary['fileReferences'], 'reference')}, "
        f"{counted(summary['rows'], 'row')}",
    ]
    if summary.get("portOnlyTypes"):
        lines.append("readable by this port only: value types beyond Sleeper's (float, boolean, date, timestamp)")
    if summary.get("upsert"):
        lines.append("readable by this port only: one row per row key, the last written (sleeper.table.upsert)")
    return Panel("\n".join(lines), title=f"Table {summary['tableName']}")


def rows_table(rows: list[dict[str, Any]], total: int) -> Table:
    """Query result rows (the first few) as a table."""
    out = Table(title=counted(total, "row") + (f" (first {len(rows):,})" if len(rows) < total else ""))
    for name in rows[0] if rows else ():
        out.add_column(name, overflow="fold")
    for row in rows:
        out.add_row(*(_bound(v) if isinstance(v, bytes) else str(v) for v in row.values()))
    return out
