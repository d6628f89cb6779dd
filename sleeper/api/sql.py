"""Read-only SQL over an instance's tables, run by DuckDB over the tables' lazy Arrow streams.

``instance.sql("select name, count(*) from people where age > 30 group by name")`` returns the result as a
``pyarrow.RecordBatchReader``, streamed as DuckDB produces it (``sleeper sql`` on the command line). Only one
``SELECT`` statement (or ``WITH ... SELECT``) is accepted; anything that could write, attach, configure or read files
is refused with :class:`SqlError` before DuckDB runs anything: other statements (``INSERT``, ``COPY``, ``ATTACH``,
``PRAGMA``, ``SET``...), several statements, and table functions such as ``read_parquet(...)`` or ``read_csv(...)``.
The DuckDB connection is made with file access and extension loading disabled and its configuration locked, so a
statement cannot undo that either.

Every table of the instance a statement names (in ``FROM`` or ``JOIN``, in subqueries and ``WITH`` clauses too) is
exposed to DuckDB as that table's :class:`~sleeper.api.scan.Scan`, an Arrow C stream read as DuckDB consumes it, with
the table's rules applied as in every query. A name that is no table of the instance (nor a ``WITH`` name) is refused
with the list of the instance's tables.

The ``WHERE`` clause's simple predicates on one table are pushed into that table's scan as a filter
(:mod:`sleeper.core.filter`), so row key predicates plan only the leaves that can match and every predicate skips row
groups by their statistics: ``column op constant`` (``=``, ``!=``, ``<``, ``<=``, ``>``, ``>=``, constant on either
side), ``column [not] in (constants)``, ``column [not] between constant and constant``, ``column is [not] null``,
``column [not] like 'pattern'`` and ``starts_with(column, 'prefix')``, and ``and``/``or``/``not`` of those on one
table. A predicate is pushed only when it is certain to mean the same to the scan as to DuckDB: its column is found in
exactly one table of its ``FROM`` (by qualifier or by name), that table is named once in the statement and is on a
side of the joins whose rows the ``WHERE`` can only remove (an inner join, the kept side of an outer join), and the
constant has the column's type (integers for integer columns, strings for string columns, booleans for boolean
columns; floating point columns push only ``is [not] null``, since DuckDB orders NaN above every number). DuckDB still
applies the whole ``WHERE``, so what is pushed narrows what is read, never the result.

Each scan reads only the columns the statement names (anywhere in it), unless it may read columns it does not name:
``*``, ``COLUMNS(...)``, ``#1``, a natural join, or a table used as a column.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import pyarrow as pa

from sleeper.core import (
    INT_MAX,
    INT_MIN,
    LONG_MAX,
    LONG_MIN,
    And,
    Between,
    Compare,
    Field,
    Filter,
    FilterError,
    InList,
    IsNull,
    MissingExtraError,
    Not,
    Or,
    PrimitiveType,
    Schema,
    SleeperError,
    StartsWith,
    TableStatus,
    ValueType,
    conjoin,
    filter_of,
    like,
)

__all__ = ["ALLOWED_TABLE_FUNCTIONS", "SqlError", "SqlPlan", "plan_sql", "run_sql"]

ALLOWED_TABLE_FUNCTIONS = frozenset({"range", "generate_series", "unnest"})
"""Table functions a statement may use in ``FROM``: they make rows from their arguments and read nothing."""

CONNECTION_CONFIG: Mapping[str, object] = {
    "enable_external_access": False,
    "autoinstall_known_extensions": False,
    "autoload_known_extensions": False,
    "python_enable_replacements": False,
    "lock_configuration": True,
}
"""The DuckDB connection a statement runs in: no file or network access, no extensions loaded, no Python variables
read by name (only the tables registered), and the configuration locked so a statement cannot change it."""


class _Catalog(Protocol):
    """What SQL needs of an instance (:class:`sleeper.api.instance.Instance`): its tables, and a table by name."""

    def tables(self) -> Sequence[TableStatus]: ...

    def table(self, name: str) -> Any: ...


class SqlError(SleeperError):
    """A SQL statement is refused or fails: it is not a single SELECT, it reads files or names a table the instance
    does not have, it has bad syntax, or DuckDB cannot run it. The message is one line naming what is wrong."""


@dataclass(frozen=True, slots=True)
class SqlPlan:
    """What a statement reads.

    Attributes:
        statement: The statement, as given.
        tables: The instance's tables it names, each once, in order of first mention.
        filters: The filter pushed into each table's scan (a table absent has none).
        columns: The columns each table's scan reads, in schema order (a table absent reads every column).
    """

    statement: str
    tables: tuple[str, ...]
    filters: Mapping[str, Filter] = field(default_factory=dict)
    columns: Mapping[str, tuple[str, ...]] = field(default_factory=dict)


def run_sql(instance: _Catalog, statement: str, *, batch_rows: int | None = None) -> pa.RecordBatchReader:
    """Runs a read-only statement over the instance's tables (see the module's description); the rows stream as they
    are read.

    Args:
        instance: The instance whose tables the statement names.
        statement: One ``SELECT`` (or ``WITH ... SELECT``) statement.
        batch_rows: The most rows in a batch of the result (DuckDB's default if None).

    Raises:
        SqlError: If the statement is refused (not one SELECT, a table function that reads, a table the instance does
            not have, bad syntax) or DuckDB cannot run it.
        MissingExtraError: If DuckDB is not installed (the ``dataframes`` extra).
    """
    duckdb = _duckdb()
    connection = duckdb.connect(config=dict(CONNECTION_CONFIG))
    try:
        tables: dict[str, Any] = {}

        def schema_of(name: str) -> Schema:
            tables[name] = tables.get(name) or instance.table(name)
            schema: Schema = tables[name].schema
            return schema

        names = [status.table_name for status in instance.tables()]
        plan = plan_sql(statement, names, schema_of, connection=connection)

        def bind(columns: Mapping[str, tuple[str, ...]]) -> Any:
            for name in plan.tables:
                table = tables.get(name) or instance.table(name)
                connection.register(name, table.scan(filter=plan.filters.get(name), columns=columns.get(name)))
            return connection.sql(statement)

        try:
            relation = bind(plan.columns)
        except duckdb.Error:
            if not plan.columns:
                raise
            relation = bind({})  # so that an error names every column of the tables, not only those read
        reader = relation.to_arrow_reader(batch_rows or 131_072)
    except duckdb.Error as e:
        connection.close()
        raise SqlError(f"cannot run the statement: {_one_line(str(e))}") from None
    except BaseException:
        connection.close()
        raise
    return pa.RecordBatchReader.from_batches(reader.schema, _batches(reader, connection, duckdb.Error))


def _batches(reader: pa.RecordBatchReader, connection: Any, errors: type[Exception]) -> Iterator[pa.RecordBatch]:
    """The result's batches; the connection is closed once they are read (or the reader is dropped)."""
    try:
        yield from reader
    except errors as e:
        raise SqlError(f"the statement failed: {_one_line(str(e))}") from None
    finally:
        connection.close()


def _duckdb() -> Any:
    try:
        import duckdb
    except ImportError:
        raise MissingExtraError("Instance.sql", "dataframes", "duckdb") from None
    return duckdb


def _one_line(text: str) -> str:
    """DuckDB's message in one line, without the Python traceback it appends when a scan's stream raised."""
    return " ".join(text.split("Detail: Python exception:", 1)[0].split()).rstrip(".") + "."


# ----------------------------------------------------------------------------------------------------------------
# planning
# ----------------------------------------------------------------------------------------------------------------


def plan_sql(
    statement: str,
    table_names: Sequence[str],
    schema_of: Callable[[str], Schema],
    *,
    connection: Any = None,
) -> SqlPlan:
    """Checks a statement is one read-only SELECT over the given tables, and finds the filter to push into each
    table's scan and the columns it needs.

    Args:
        statement: The statement.
        table_names: The instance's tables.
        schema_of: The schema of a table, asked only for the tables the statement names.
        connection: A DuckDB connection to parse with (a new in-memory one if None).

    Raises:
        SqlError: If the statement is refused (see :func:`run_sql`).
        MissingExtraError: If DuckDB is not installed.
    """
    if not isinstance(statement, str) or not statement.strip():
        raise SqlError("give a SELECT statement, such as: select * from people where age > 30")
    tree = _parse(statement, connection)
    ctes = {name.lower() for name in _cte_names(tree)}
    _refuse_table_functions(tree, table_names)
    _refuse_other_references(tree)
    references = [_resolve(ref, table_names, ctes) for ref in _walk(tree) if ref.get("type") == "BASE_TABLE"]
    named = list(dict.fromkeys(name for name, _ in references if name is not None))
    clashes = sorted({n for n in named if sum(m.lower() == n.lower() for m in named) > 1})
    if clashes:
        raise SqlError(
            f"the tables {', '.join(clashes)} differ only in case, which SQL does not tell apart: "
            "query them in separate statements"
        )
    schemas = {name: schema_of(name) for name in named}
    shadowed = {name for name, hidden in references if hidden}
    once = {name for name in named if name not in shadowed and sum(n == name for n, _ in references) == 1}
    pushed: dict[str, list[Filter]] = {}
    for node in _walk(tree):
        if node.get("type") == "SELECT_NODE" and isinstance(node.get("where_clause"), dict):
            scope = _Scope(_bindings(node.get("from_table"), True, table_names, ctes, schemas), _aliases(node))
            for conjunct in _conjuncts(node["where_clause"]):
                found = _convert(conjunct, scope)
                if found is not None and found[0] in once and _suits(found[1], schemas[found[0]]):
                    pushed.setdefault(found[0], []).append(found[1])
    filters = {name: f for name, parts in pushed.items() if (f := conjoin(parts)) is not None}
    return SqlPlan(statement, tuple(named), filters, _projections(tree, schemas))


def _parse(statement: str, connection: Any) -> dict[str, Any]:
    """The statement's syntax tree (DuckDB's ``json_serialize_sql``, which serialises only SELECT statements).

    Raises:
        SqlError: If it has bad syntax, is not a SELECT, or is several statements.
    """
    duckdb = _duckdb()
    con = connection if connection is not None else duckdb.connect(config=dict(CONNECTION_CONFIG))
    try:
        tree: dict[str, Any] = json.loads(con.execute("select json_serialize_sql(?)", [statement]).fetchall()[0][0])
        refused = "Only SELECT" in str(tree.get("error_message", ""))
        kinds = [_kind(s) for s in con.extract_statements(statement)] if refused else ["SELECT"]
    except duckdb.Error as e:
        raise SqlError(f"cannot read the statement: {_one_line(str(e))}") from None
    finally:
        if connection is None:
            con.close()
    statements = tree.get("statements") or []
    if len(kinds) > 1 or len(statements) > 1:
        raise SqlError(
            f"give one SELECT statement at a time, not {max(len(kinds), len(statements))} (remove the ';' between them)"
        )
    if tree.get("error"):
        message = str(tree.get("error_message", "not a statement"))
        if refused:
            raise SqlError(
                f"SQL here is read-only: only one SELECT (or WITH ... SELECT) statement is accepted, not {kinds[0]}"
            )
        position = tree.get("position")
        where = f" at position {position}" if position is not None else ""
        raise SqlError(f"bad SQL{where}: {_one_line(message)}")
    if not statements:
        raise SqlError("give a SELECT statement, such as: select * from people where age > 30")
    return tree


def _kind(statement: Any) -> str:
    """A parsed statement's kind, such as ``INSERT`` or ``COPY``."""
    kind = getattr(statement, "type", None)
    return str(getattr(kind, "name", kind)).rsplit(".", 1)[-1].upper()


def _walk(node: object) -> Iterator[dict[str, Any]]:
    """Every object in the statement's tree, parents before children."""
    if isinstance(node, dict):
        yield node
        for value in node.values():
            yield from _walk(value)
    elif isinstance(node, list):
        for item in node:
            yield from _walk(item)


def _cte_names(tree: dict[str, Any]) -> list[str]:
    names: list[str] = []
    for node in _walk(tree):
        cte_map = node.get("cte_map")
        if isinstance(cte_map, dict):
            names.extend(str(entry["key"]) for entry in cte_map.get("map") or [] if isinstance(entry, dict))
    return names


def _refuse_table_functions(tree: dict[str, Any], table_names: Sequence[str]) -> None:
    for node in _walk(tree):
        if node.get("type") == "TABLE_FUNCTION":
            function = node.get("function") or {}
            name = str(function.get("function_name", "?"))
            if name.lower() not in ALLOWED_TABLE_FUNCTIONS:
                raise SqlError(
                    f"the table function {name}(...) is refused: SQL here reads only the instance's tables "
                    f"({_listed(table_names)})"
                )


def _refuse_other_references(tree: dict[str, Any]) -> None:
    """``SHOW``, ``DESCRIBE`` and ``SUMMARIZE`` parse as a SELECT of a ``SHOW_REF``: they are refused too."""
    for node in _walk(tree):
        if node.get("type") == "SHOW_REF":
            raise SqlError(
                "SQL here reads the instance's tables: only SELECT statements are accepted, not SHOW, DESCRIBE or "
                "SUMMARIZE (a table's columns: 'sleeper table show NAME', or table.schema)"
            )


def _resolve(ref: dict[str, Any], table_names: Sequence[str], ctes: set[str]) -> tuple[str | None, bool]:
    """The instance table a ``FROM`` name stands for (None for a ``WITH`` name), and whether a ``WITH`` name shadows
    it somewhere (then nothing is pushed into it).

    Raises:
        SqlError: If it names neither a table of the instance nor a ``WITH`` clause.
    """
    name = str(ref.get("table_name", ""))
    schema = str(ref.get("schema_name") or "")
    catalog = str(ref.get("catalog_name") or "")
    qualified = ".".join(p for p in (catalog, schema, name) if p)
    if catalog.lower() not in ("", "memory") or schema.lower() not in ("", "main"):
        raise SqlError(f"no table {qualified!r} in the instance (tables: {_listed(table_names)})")
    table = _table_named(name, table_names)
    shadowed = name.lower() in ctes and not schema
    if table is None:
        if shadowed:
            return None, False
        raise SqlError(f"no table {name!r} in the instance (tables: {_listed(table_names)})")
    return table, shadowed


def _table_named(name: str, table_names: Sequence[str]) -> str | None:
    if name in table_names:
        return name
    matches = [t for t in table_names if t.lower() == name.lower()]
    return matches[0] if len(matches) == 1 else None


def _listed(names: Sequence[str]) -> str:
    return ", ".join(sorted(names)) or "none yet"


# ----------------------------------------------------------------------------------------------------------------
# pushdown
# ----------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Binding:
    """An item of a ``FROM``: the name its columns are qualified by, the instance table (None if it is something
    else: a subquery, a ``WITH`` name, a table function), its schema, and whether the ``WHERE`` may be pushed into
    it."""

    name: str
    table: str | None
    schema: Schema | None
    pushable: bool


@dataclass(frozen=True, slots=True)
class _Scope:
    bindings: list[_Binding]
    aliases: frozenset[str]


def _bindings(
    ref: object, pushable: bool, table_names: Sequence[str], ctes: set[str], schemas: Mapping[str, Schema]
) -> list[_Binding]:
    if not isinstance(ref, dict):
        return []
    kind = ref.get("type")
    alias = str(ref.get("alias") or "")
    if kind == "BASE_TABLE":
        name = str(ref.get("table_name", ""))
        table = None if name.lower() in ctes else _table_named(name, table_names)
        schema = None if table is None else schemas.get(table)
        return [_Binding((alias or name).lower(), table, schema, pushable and table is not None)]
    if kind == "JOIN":
        join, how = ref.get("join_type"), ref.get("ref_type")
        inner = join == "INNER" and how in ("REGULAR", "CROSS", "NATURAL")
        left = inner or (join == "LEFT" and how in ("REGULAR", "NATURAL"))
        right = inner or (join == "RIGHT" and how in ("REGULAR", "NATURAL"))
        return _bindings(ref.get("left"), pushable and left, table_names, ctes, schemas) + _bindings(
            ref.get("right"), pushable and right, table_names, ctes, schemas
        )
    if kind == "EMPTY":
        return []
    return [_Binding(alias.lower(), None, None, False)]


def _aliases(node: dict[str, Any]) -> frozenset[str]:
    """The names the select list gives its expressions (a ``WHERE`` may name them too, so they are never pushed)."""
    return frozenset(
        str(e["alias"]).lower() for e in node.get("select_list") or [] if isinstance(e, dict) and e.get("alias")
    )


def _projections(tree: dict[str, Any], schemas: Mapping[str, Schema]) -> dict[str, tuple[str, ...]]:
    """The columns each table's scan needs: those whose name the statement uses anywhere (as any part of a column
    reference, or in ``USING``), a superset of what DuckDB reads. None is left out if the statement could read a
    column without naming it: a ``*`` or ``COLUMNS(...)``, a positional reference (``#1``), a natural join, or a table
    named as a column (a row as a struct)."""
    used: set[str] = set()
    single: set[str] = set()
    relations: set[str] = set()
    for node in _walk(tree):
        kind = node.get("class")
        if kind in ("STAR", "POSITIONAL_REFERENCE") or node.get("ref_type") == "NATURAL":
            return {}
        if kind == "COLUMN_REF":
            parts = [str(n).lower() for n in node.get("column_names") or []]
            used.update(parts)
            if len(parts) == 1:
                single.update(parts)
        used.update(str(c).lower() for c in node.get("using_columns") or [])
        if node.get("type") == "BASE_TABLE":
            relations.update(str(node.get(k) or "").lower() for k in ("table_name", "alias"))
    if single & relations:
        return {}
    out = {}
    for table, schema in schemas.items():
        chosen = tuple(name for name in schema.field_names if name.lower() in used)
        if len(chosen) < len(schema.field_names):
            out[table] = chosen or (schema.row_key_names[0],)
    return out


def _conjuncts(expression: dict[str, Any]) -> Iterator[dict[str, Any]]:
    if expression.get("type") == "CONJUNCTION_AND":
        for child in expression.get("children") or []:
            yield from _conjuncts(child)
    else:
        yield expression


_COMPARISONS = {
    "COMPARE_EQUAL": "=",
    "COMPARE_NOTEQUAL": "!=",
    "COMPARE_LESSTHAN": "<",
    "COMPARE_LESSTHANOREQUALTO": "<=",
    "COMPARE_GREATERTHAN": ">",
    "COMPARE_GREATERTHANOREQUALTO": ">=",
}
_FLIPPED = {"=": "=", "!=": "!=", "<": ">", "<=": ">=", ">": "<", ">=": "<="}


def _convert(node: dict[str, Any], scope: _Scope) -> tuple[str, Filter] | None:
    """The filter an expression of the ``WHERE`` is, with the one table it reads; None if it is not one the scan can
    apply with the same meaning."""
    kind = node.get("type")
    if kind in ("CONJUNCTION_AND", "CONJUNCTION_OR"):
        parts = [_convert(child, scope) for child in node.get("children") or []]
        if not parts or any(p is None for p in parts) or len({p[0] for p in parts if p is not None}) != 1:
            return None
        table = parts[0][0] if parts[0] is not None else ""
        filters = tuple(p[1] for p in parts if p is not None)
        return table, And(filters) if kind == "CONJUNCTION_AND" else Or(filters)
    if kind == "OPERATOR_NOT":
        children = node.get("children") or []
        inner = _convert(children[0], scope) if len(children) == 1 else None
        return None if inner is None else (inner[0], Not(inner[1]))
    if kind in _COMPARISONS:
        op = _COMPARISONS[kind]
        left, right = node.get("left") or {}, node.get("right") or {}
        column = _column(left, scope)
        if column is not None:
            value = _literal(right, column[1])
        else:
            column, op = _column(right, scope), _FLIPPED[op]
            value = None if column is None else _literal(left, column[1])
        if column is None or value is None:
            return None
        return column[0], Compare(column[1].name, op, value)
    if kind in ("COMPARE_IN", "COMPARE_NOT_IN"):
        children = node.get("children") or []
        column = _column(children[0], scope) if len(children) > 1 else None
        if column is None:
            return None
        values = [_literal(child, column[1]) for child in children[1:]]
        if any(v is None for v in values):
            return None
        items = tuple(v for v in values if v is not None)
        return column[0], InList(column[1].name, items, kind == "COMPARE_NOT_IN")
    if kind in ("COMPARE_BETWEEN", "COMPARE_NOT_BETWEEN"):
        column = _column(node.get("input") or {}, scope)
        if column is None:
            return None
        low, high = _literal(node.get("lower") or {}, column[1]), _literal(node.get("upper") or {}, column[1])
        if low is None or high is None:
            return None
        return column[0], Between(column[1].name, low, high, kind == "COMPARE_NOT_BETWEEN")
    if kind in ("OPERATOR_IS_NULL", "OPERATOR_IS_NOT_NULL"):
        children = node.get("children") or []
        column = _column(children[0], scope) if len(children) == 1 else None
        return None if column is None else (column[0], IsNull(column[1].name, kind == "OPERATOR_IS_NOT_NULL"))
    if kind == "FUNCTION":
        return _function(node, scope)
    return None


def _function(node: dict[str, Any], scope: _Scope) -> tuple[str, Filter] | None:
    """``like``, ``not like`` and ``starts_with`` of a string column and a string constant."""
    name = str(node.get("function_name", "")).lower()
    arguments = node.get("arguments")
    args = [a.get("expression") or {} for a in arguments] if isinstance(arguments, list) else node.get("children")
    if name not in ("~~", "!~~", "starts_with", "prefix") or not isinstance(args, list) or len(args) != 2:
        return None
    column = _column(args[0], scope)
    if column is None or column[1].type is not PrimitiveType.STRING:
        return None
    pattern = _literal(args[1], column[1])
    if not isinstance(pattern, str):
        return None
    if name in ("starts_with", "prefix"):
        return column[0], StartsWith(column[1].name, pattern)
    if "\\" in pattern:
        return None  # DuckDB reads a backslash as itself, the scan as an escape
    return column[0], like(column[1].name, pattern, negated=name == "!~~")


def _column(node: dict[str, Any], scope: _Scope) -> tuple[str, Field] | None:
    """The table and field a column reference names, if it names a column of exactly one table of the scope that the
    ``WHERE`` may be pushed into."""
    if node.get("class") != "COLUMN_REF":
        return None
    names = [str(n) for n in node.get("column_names") or []]
    if len(names) == 2:
        matches = [b for b in scope.bindings if b.name == names[0].lower()]
        if len(matches) != 1:
            return None
        binding, field = matches[0], _field(matches[0].schema, names[1])
    elif len(names) == 1:
        if names[0].lower() in scope.aliases or any(b.schema is None for b in scope.bindings):
            return None
        found = [(b, f) for b in scope.bindings if (f := _field(b.schema, names[0])) is not None]
        if len(found) != 1:
            return None
        binding, field = found[0]
    else:
        return None
    if field is None or not binding.pushable or binding.table is None:
        return None
    return binding.table, field


def _field(schema: Schema | None, name: str) -> Field | None:
    if schema is None:
        return None
    if schema.has_field(name):
        return schema.field(name)
    matches = [f for f in schema.field_names if f.lower() == name.lower()]
    return schema.field(matches[0]) if len(matches) == 1 else None


_INTEGER_RANGE = {PrimitiveType.INT: (INT_MIN, INT_MAX), PrimitiveType.LONG: (LONG_MIN, LONG_MAX)}
_INTEGER_TYPE_IDS = frozenset({"TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT", "UTINYINT", "USMALLINT"})


def _literal(node: dict[str, Any], column: Field) -> int | str | bool | None:
    """A constant of the statement as a value of the column's type, or None if it is not a constant of that type."""
    if node.get("class") != "CONSTANT":
        return None
    raw: object = None
    literal, value = node.get("literal"), node.get("value")
    if isinstance(literal, dict):  # {"kind": "INTEGER", "text": "3"}
        kind, text = literal.get("kind"), str(literal.get("text", ""))
        if kind == "INTEGER":
            try:
                raw = int(text)
            except ValueError:
                return None
        elif kind == "STRING":
            raw = text
        elif kind == "BOOLEAN":
            raw = text.lower() == "true"
    elif isinstance(value, dict) and not value.get("is_null"):  # {"type": {"id": "INTEGER"}, "value": 3}
        type_id = (value.get("type") or {}).get("id")
        inner = value.get("value")
        if (type_id in _INTEGER_TYPE_IDS and isinstance(inner, int)) or (
            type_id in ("VARCHAR", "BOOLEAN") and isinstance(inner, (str, bool))
        ):
            raw = inner
    t = column.type
    if t in _INTEGER_RANGE:
        low, high = _INTEGER_RANGE[t]
        return raw if isinstance(raw, int) and not isinstance(raw, bool) and low <= raw <= high else None
    if t is PrimitiveType.STRING:
        return raw if isinstance(raw, str) else None
    if t is ValueType.BOOLEAN:
        return raw if isinstance(raw, bool) else None
    return None


def _suits(node: Filter, schema: Schema) -> bool:
    try:
        filter_of(node, schema)
    except FilterError:
        return False
    return True
