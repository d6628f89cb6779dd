"""Instance and table properties: raw string values, typed reads with fallbacks, validated writes.

Values are held as text, exactly as in the ``.properties`` files, so that reading and writing a file Sleeper wrote
changes nothing, including properties this port does not know (they are kept and reported, not rejected).

A property is named either by its name or by its ``PropertyDefinition`` constant, e.g.
``instance.get_int(GARBAGE_COLLECTOR_BATCH_SIZE)`` or ``instance.get_int("sleeper.gc.batch.size")``.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass

from sleeper.core.exceptions import PropertyError, SleeperError
from sleeper.core.properties import javaprops
from sleeper.core.properties.definitions import DefaultRule, PropertyDefinition, PropertyIndex
from sleeper.core.properties.index import INSTANCE_PROPERTY_INDEX, TABLE_PROPERTY_INDEX
from sleeper.core.properties.instance_common import TAGS
from sleeper.core.properties.instance_compaction import DEFAULT_GARBAGE_COLLECTOR_DELAY_BEFORE_DELETION
from sleeper.core.properties.instance_defaults import DEFAULT_ASYNC_COMMIT_BEHAVIOUR
from sleeper.core.properties.instance_query import (
    DEFAULT_QUERY_PROCESSOR_CACHE_TIMEOUT,
    QUERY_PROCESSOR_LAMBDA_TIMEOUT_IN_SECONDS,
)
from sleeper.core.properties.table import (
    GARBAGE_COLLECTOR_DELAY_BEFORE_DELETION,
    IMMUTABLE_TABLE_PROPERTIES,
    QUERY_PROCESSOR_CACHE_TIMEOUT,
    SCHEMA,
    STATESTORE_ASYNC_COMMITS_ENABLED,
    STATESTORE_CLASSNAME,
    TABLE_ID,
    TABLE_NAME,
    TABLE_ONLINE,
)
from sleeper.core.properties.validation import ChoiceValue, parse_bytes, parse_integer, parse_list
from sleeper.core.schema import Schema
from sleeper.core.table import TableStatus

LOGGER = logging.getLogger(__name__)

PropertyRef = str | PropertyDefinition
"""A property named by its name or by its definition."""

PropertyValue = str | bool | int | Sequence[str] | None
"""A value to set: text as is, booleans as ``true``/``false``, integers in decimal, sequences comma-separated, None to
unset."""

INSTANCE_PROPERTIES_KEY = "instance.properties"
"""The key of the instance properties object in the config bucket."""


def table_properties_key(table_id: str) -> str:
    """The key of a table's properties object in the config bucket: ``tables/table-<id>.properties``."""
    return f"tables/table-{table_id}.properties"


def format_value(value: str | bool | int | Sequence[str]) -> str:
    """Formats a value as property text: booleans ``true``/``false``, integers in decimal, sequences comma-joined."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    return ",".join(value)


class _Properties:
    """Raw values of one kind of properties, with typed reads. Subclasses decide how unset values fall back."""

    _index: PropertyIndex
    _kind: str

    def __init__(self, values: Mapping[str, str] | None = None) -> None:
        self._values: dict[str, str] = dict(values or {})

    # --- lookup -------------------------------------------------------------------------------------------------

    @property
    def index(self) -> PropertyIndex:
        """The definitions of this kind of properties."""
        return self._index

    def definitions(self) -> tuple[PropertyDefinition, ...]:
        """Every definition of this kind of properties, in definition order."""
        return tuple(self._index)

    def definition(self, prop: PropertyRef) -> PropertyDefinition:
        """The definition of a property.

        Raises:
            PropertyError: If the property is not one of this kind.
        """
        name = prop if isinstance(prop, str) else prop.name
        definition = self._index.get(name)
        if definition is None:
            raise PropertyError(f"unknown {self._kind} property {name}")
        return definition

    def _raw(self, definition: PropertyDefinition) -> str | None:
        value = self._values.get(definition.name)
        if value is None or (definition.ignore_empty and value == ""):
            return None
        return value

    def is_set(self, prop: PropertyRef) -> bool:
        """Whether a property has an explicit value (an empty value counts as unset for most properties)."""
        return self._raw(self.definition(prop)) is not None

    def get(self, prop: PropertyRef) -> str | None:
        """The value of a property: its own value if set, otherwise its fallback or built-in default.

        Raises:
            PropertyError: If the property is unknown.
        """
        return self._resolve(self.definition(prop))

    def _resolve(self, definition: PropertyDefinition) -> str | None:
        raise NotImplementedError

    def _require(self, prop: PropertyRef) -> tuple[PropertyDefinition, str]:
        definition = self.definition(prop)
        value = self._resolve(definition)
        if value is None:
            raise PropertyError(f"{definition.name} is not set and has no default")
        return definition, value

    def get_int(self, prop: PropertyRef) -> int:
        """The value of a property as an integer (up to a Java long).

        Raises:
            PropertyError: If the property has no value or it is not an integer.
        """
        definition, value = self._require(prop)
        number = parse_integer(value, long=True)
        if number is None:
            raise PropertyError(f"{definition.name}: invalid value {value!r}, expected an integer")
        return number

    def get_float(self, prop: PropertyRef) -> float:
        """The value of a property as a number.

        Raises:
            PropertyError: If the property has no value or it is not a number.
        """
        definition, value = self._require(prop)
        try:
            return float(value)
        except ValueError:
            raise PropertyError(f"{definition.name}: invalid value {value!r}, expected a number") from None

    def get_bool(self, prop: PropertyRef) -> bool:
        """The value of a property as a boolean (``true`` or ``false``, any case).

        Raises:
            PropertyError: If the property has no value or it is not true or false.
        """
        definition, value = self._require(prop)
        if value.lower() == "true":
            return True
        if value.lower() == "false":
            return False
        raise PropertyError(f"{definition.name}: invalid value {value!r}, expected true or false")

    def get_list(self, prop: PropertyRef) -> list[str]:
        """The value of a property as a comma-separated list of trimmed items; empty if the property has no value."""
        value = self.get(prop)
        return [] if value is None else parse_list(value)

    def get_bytes(self, prop: PropertyRef) -> int:
        """The value of a property as a number of bytes, e.g. ``1G`` is 1073741824.

        Raises:
            PropertyError: If the property has no value or it is not a size.
        """
        definition, value = self._require(prop)
        size = parse_bytes(value)
        if size is None:
            raise PropertyError(f"{definition.name}: invalid value {value!r}, expected a number of bytes")
        return size

    def get_enum(self, prop: PropertyRef) -> str:
        """The value of a property that takes one of a set of values, spelled as in its definition.

        For example ``sleeper.table.data.engine=datafusion`` gives ``DATAFUSION``.

        Raises:
            PropertyError: If the property has no value, it is not one of the allowed values, or the property does
                not take a fixed set of values.
        """
        definition, value = self._require(prop)
        validation = definition.validation
        if not isinstance(validation, ChoiceValue):
            raise PropertyError(f"{definition.name} does not take a fixed set of values")
        choice = validation.canonical(value)
        if choice is None:
            raise PropertyError(f"{definition.name}: invalid value {value!r}, expected {validation.describe()}")
        return choice

    # --- changes ------------------------------------------------------------------------------------------------

    def set(self, prop: PropertyRef, value: PropertyValue) -> None:
        """Sets a property, after checking the value.

        Args:
            prop: The property.
            value: The value; None unsets the property.

        Raises:
            PropertyError: If the property is unknown or the value is invalid; the message names both.
        """
        definition = self.definition(prop)
        if value is None:
            self._values.pop(definition.name, None)
            return
        text = format_value(value)
        definition.check(text)
        self._values[definition.name] = text

    def unset(self, prop: PropertyRef) -> None:
        """Removes a property's explicit value, so that it falls back to its default.

        Raises:
            PropertyError: If the property is unknown.
        """
        self._values.pop(self.definition(prop).name, None)

    # --- listing ------------------------------------------------------------------------------------------------

    def to_dict(self) -> dict[str, str]:
        """The explicitly set values, known properties in definition order and then unknown ones sorted by name."""
        ordered = {name: self._values[name] for name in self._index.names() if name in self._values}
        for name in sorted(self._values):
            if name not in ordered:
                ordered[name] = self._values[name]
        return ordered

    def items(self) -> Iterator[tuple[str, str]]:
        """The explicitly set ``(name, value)`` pairs, in the order of ``to_dict``."""
        return iter(self.to_dict().items())

    def unknown_properties(self) -> dict[str, str]:
        """Values of properties that are not defined (e.g. from a newer or older Sleeper), sorted by name."""
        return {name: self._values[name] for name in sorted(self._values) if name not in self._index}

    def to_text(self) -> str:
        """These properties as Java ``.properties`` text, in definition order then unknown properties."""
        return javaprops.dump(self._values, order=self._index.names())

    # --- validation ---------------------------------------------------------------------------------------------

    def problems(self) -> list[str]:
        """Everything wrong with these properties, one line each; empty if they are valid.

        Checks every explicitly set value against its definition and that every required property has a value.
        Properties that only a deployment sets are not checked. Valid values that carry a risk are reported by
        ``warnings`` instead.
        """
        problems: list[str] = []
        for definition in self._index:
            if definition.set_by_cdk:
                continue
            value = self._raw(definition)
            if value is None:
                if definition.required and self._resolve(definition) is None:
                    problems.append(f"{definition.name} must be set")
                continue
            problem = definition.problem(value)
            if problem is not None:
                problems.append(problem)
        return problems

    def warnings(self) -> list[str]:
        """Valid values that carry a risk, one line each naming the risk and the value that removes it; empty if
        there is none (or if a value the rules need is invalid, which ``problems`` reports).

        These are settings Sleeper accepts that break a safety rule of this port, such as a garbage collection delay
        no longer than a query may take: they are kept and take effect, and the risk is reported.
        """
        try:
            return self._cross_property_warnings()
        except PropertyError:
            return []

    def _cross_property_warnings(self) -> list[str]:
        return []

    def validate_all(self) -> list[str]:
        """Checks all the properties, and logs each warning (see ``warnings``) at WARNING level.

        Returns:
            The warnings, for a caller that shows them to a user.

        Raises:
            PropertyError: Listing every problem found, separated by ``; ``.
        """
        problems = self.problems()
        if problems:
            raise PropertyError("; ".join(problems))
        found = self.warnings()
        for warning in found:
            LOGGER.warning("%s", warning)
        return found

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, _Properties) or type(other) is not type(self):
            return NotImplemented
        return self._values == other._values

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.to_dict()!r})"


class InstanceProperties(_Properties):
    """The properties of a Sleeper instance (``instance.properties`` in the config bucket).

    An unset property takes the value of the property named in its ``default_property`` if any (e.g. Lambda memory
    settings fall back to ``sleeper.default.lambda.table.state.memory.mb``), otherwise its built-in default.
    """

    _index = INSTANCE_PROPERTY_INDEX
    _kind = "instance"

    def __init__(self, values: Mapping[str, str] | None = None) -> None:
        """Creates instance properties from raw values, without checking them (see ``validate_all``).

        Args:
            values: Property names and their text values. Unknown names are kept and reported by
                ``unknown_properties``.
        """
        super().__init__(values)

    @classmethod
    def from_text(cls, text: str) -> InstanceProperties:
        """Reads instance properties from Java ``.properties`` text, without checking them."""
        return cls(javaprops.load(text))

    def copy(self) -> InstanceProperties:
        """An independent copy."""
        return InstanceProperties(self._values)

    def _resolve(self, definition: PropertyDefinition) -> str | None:
        seen: set[str] = set()
        current = definition
        while True:
            value = self._raw(current)
            if value is not None:
                return value
            if current.default_property is None or current.name in seen:
                return current.default
            seen.add(current.name)
            current = self._index[current.default_property]

    def tags(self) -> dict[str, str]:
        """The tags from ``sleeper.tags`` (``key1,value1,key2,value2``) as a dict; empty if unset or malformed."""
        items = self.get_list(TAGS)
        if len(items) % 2 != 0:
            return {}
        return dict(zip(items[0::2], items[1::2], strict=True))

    def _cross_property_warnings(self) -> list[str]:
        problem = gc_delay_problem(
            gc_delay=DEFAULT_GARBAGE_COLLECTOR_DELAY_BEFORE_DELETION.name,
            gc_delay_minutes=self.get_int(DEFAULT_GARBAGE_COLLECTOR_DELAY_BEFORE_DELETION),
            cache_timeout=DEFAULT_QUERY_PROCESSOR_CACHE_TIMEOUT.name,
            cache_timeout_seconds=self.get_int(DEFAULT_QUERY_PROCESSOR_CACHE_TIMEOUT),
            query_timeout_seconds=self.get_int(QUERY_PROCESSOR_LAMBDA_TIMEOUT_IN_SECONDS),
        )
        return [] if problem is None else [problem]


class TableProperties(_Properties):
    """The properties of one Sleeper table (``tables/table-<id>.properties`` in the config bucket).

    An unset table property falls back to the property named in its ``default_property`` (usually the instance
    property ``sleeper.default.table.…``, which in turn falls back to its built-in default), otherwise to its own
    built-in default. The ``...commit.async`` properties follow Sleeper's rules for asynchronous commits (see
    ``DefaultRule``).
    """

    _index = TABLE_PROPERTY_INDEX
    _kind = "table"

    def __init__(self, instance_properties: InstanceProperties, values: Mapping[str, str] | None = None) -> None:
        """Creates table properties from raw values, without checking them (see ``validate_all``).

        Args:
            instance_properties: The instance's properties, which supply the defaults.
            values: Property names and their text values. Unknown names are kept and reported by
                ``unknown_properties``.
        """
        super().__init__(values)
        self._instance = instance_properties
        self._schema_cache: tuple[str, Schema] | None = None

    @classmethod
    def from_text(cls, instance_properties: InstanceProperties, text: str) -> TableProperties:
        """Reads table properties from Java ``.properties`` text, without checking them."""
        return cls(instance_properties, javaprops.load(text))

    @property
    def instance_properties(self) -> InstanceProperties:
        """The instance properties that supply defaults."""
        return self._instance

    def copy(self) -> TableProperties:
        """An independent copy of the table values, sharing the instance properties."""
        return TableProperties(self._instance, self._values)

    def _resolve(self, definition: PropertyDefinition) -> str | None:
        value = self._raw(definition)
        if definition.default_rule is DefaultRule.ASYNC_COMMIT_ENABLED:
            return value if value is not None else self._default_async_commit_enabled()
        if definition.default_rule is DefaultRule.ASYNC_COMMIT_FOR_UPDATE:
            return self._async_commit_for_update(definition, value)
        if value is not None:
            return value
        return self._fallback(definition)

    def _fallback(self, definition: PropertyDefinition) -> str | None:
        if definition.default_property is None:
            return definition.default
        table_default = self._index.get(definition.default_property)
        if table_default is not None:
            return self._resolve(table_default)
        return self._instance.get(definition.default_property)

    def _default_async_commit_enabled(self) -> str:
        behaviour = self._instance.get_enum(DEFAULT_ASYNC_COMMIT_BEHAVIOUR)
        if behaviour == "DISABLED":
            return "false"
        if behaviour == "ALL_IMPLEMENTATIONS":
            return "true"
        return format_value("TransactionLog" in (self.get(STATESTORE_CLASSNAME) or ""))

    def _async_commit_for_update(self, definition: PropertyDefinition, value: str | None) -> str:
        if value is None:
            type_enabled = (self._fallback(definition) or "").lower() == "true"
            return format_value(type_enabled and self.get_bool(STATESTORE_ASYNC_COMMITS_ENABLED))
        if self.is_set(STATESTORE_ASYNC_COMMITS_ENABLED):
            return format_value(value.lower() == "true" and self.get_bool(STATESTORE_ASYNC_COMMITS_ENABLED))
        return value

    @property
    def table_name(self) -> str:
        """The table's name.

        Raises:
            PropertyError: If ``sleeper.table.name`` is not set.
        """
        return self._require(TABLE_NAME)[1]

    @property
    def table_id(self) -> str:
        """The table's id.

        Raises:
            PropertyError: If ``sleeper.table.id`` is not set.
        """
        return self._require(TABLE_ID)[1]

    @property
    def schema(self) -> Schema:
        """The table's schema, read from ``sleeper.table.schema``.

        Raises:
            PropertyError: If the schema is not set or is not valid schema JSON.
        """
        text = self._require(SCHEMA)[1]
        if self._schema_cache is not None and self._schema_cache[0] == text:
            return self._schema_cache[1]
        try:
            schema = Schema.from_json(text)
        except SleeperError as error:
            raise PropertyError(f"{SCHEMA.name}: invalid schema: {error}") from error
        self._schema_cache = (text, schema)
        return schema

    def set_schema(self, schema: Schema) -> None:
        """Sets ``sleeper.table.schema`` to a schema's JSON."""
        self.set(SCHEMA, schema.to_json())

    def status(self) -> TableStatus:
        """The table's id, name and whether it is online.

        Raises:
            PropertyError: If the name or id is not set.
        """
        return TableStatus(table_id=self.table_id, table_name=self.table_name, online=self.get_bool(TABLE_ONLINE))

    def _cross_property_warnings(self) -> list[str]:
        problem = gc_delay_problem(
            gc_delay=GARBAGE_COLLECTOR_DELAY_BEFORE_DELETION.name,
            gc_delay_minutes=self.get_int(GARBAGE_COLLECTOR_DELAY_BEFORE_DELETION),
            cache_timeout=QUERY_PROCESSOR_CACHE_TIMEOUT.name,
            cache_timeout_seconds=self.get_int(QUERY_PROCESSOR_CACHE_TIMEOUT),
            query_timeout_seconds=self._instance.get_int(QUERY_PROCESSOR_LAMBDA_TIMEOUT_IN_SECONDS),
        )
        return [] if problem is None else [problem]

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, TableProperties):
            return NotImplemented
        return self._values == other._values and self._instance == other._instance

    __hash__ = None


def gc_delay_problem(
    *,
    gc_delay: str,
    gc_delay_minutes: int,
    cache_timeout: str,
    cache_timeout_seconds: int,
    query_timeout_seconds: int,
) -> str | None:
    """Says whether a garbage collection delay leaves a query time to read the files it planned.

    A query may use file references cached up to the cache timeout ago and then run for up to the query processor
    timeout, so a file is only safe to delete once it has had no references for longer than both together. A shorter
    delay is what Sleeper itself ships (15 minutes against 60 s plus 900 s), so it is accepted: this names the risk
    and the least delay that removes it. This port's defaults (20 minutes) have no such risk.

    Args:
        gc_delay: The name of the garbage collection delay property.
        gc_delay_minutes: Its value, in minutes.
        cache_timeout: The name of the query state cache timeout property.
        cache_timeout_seconds: Its value, in seconds.
        query_timeout_seconds: The value of ``sleeper.query.processor.timeout.seconds``.

    Returns:
        A one-line message naming the three properties, the risk and the safe delay, or None if the delay is long
        enough.
    """
    window_seconds = cache_timeout_seconds + query_timeout_seconds
    if gc_delay_minutes * 60 > window_seconds:
        return None
    safe_minutes = window_seconds // 60 + 1
    return (
        f"{gc_delay} ({gc_delay_minutes} min) is not longer than {cache_timeout} ({cache_timeout_seconds} s) plus "
        f"{QUERY_PROCESSOR_LAMBDA_TIMEOUT_IN_SECONDS.name} ({query_timeout_seconds} s): a query planned before a "
        f"garbage collection may find a file it reads already deleted; set {gc_delay} to {safe_minutes} or more to "
        "remove the risk"
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class PropertyChange:
    """A property whose explicit value differs between two sets of properties.

    Attributes:
        name: The property name.
        before: The old explicit value, or None if it was unset.
        after: The new explicit value, or None if it is now unset.
    """

    name: str
    before: str | None
    after: str | None


def property_changes(
    old: InstanceProperties | TableProperties, new: InstanceProperties | TableProperties
) -> list[PropertyChange]:
    """The explicit values that differ between two sets of properties of the same kind, in definition order.

    Raises:
        PropertyError: If one is instance properties and the other table properties.
    """
    if type(old) is not type(new):
        raise PropertyError("cannot compare instance properties with table properties")
    before = old.to_dict()
    after = new.to_dict()
    names = list(after) + [name for name in before if name not in after]
    order = {name: i for i, name in enumerate(old.index.names())}
    names.sort(key=lambda name: (order.get(name, len(order)), name))
    return [
        PropertyChange(name=name, before=before.get(name), after=after.get(name))
        for name in names
        if before.get(name) != after.get(name)
    ]


def validate_table_update(old: TableProperties, new: TableProperties) -> None:
    """Checks that an update to an existing table changes none of the properties fixed at creation.

    Those are ``sleeper.table.id``, ``sleeper.table.schema`` and ``sleeper.table.statestore.classname``. Schemas are
    compared as schemas, so a change of JSON layout alone is allowed.

    Raises:
        PropertyError: Naming the first such property that changed.
    """
    for definition in IMMUTABLE_TABLE_PROPERTIES:
        before = old.get(definition)
        after = new.get(definition)
        if before is None or before == after:
            continue
        if definition is SCHEMA and after is not None and _same_schema(before, after):
            continue
        raise PropertyError(
            f"{definition.name} cannot be changed on an existing table (from {_short(before)} to {_short(after)})"
        )


_SET_OTHERWISE_ON_CREATE = {
    TABLE_NAME.name: "it is the name the table is created with",
    TABLE_ID.name: "a new table's id is generated",
    SCHEMA.name: "the schema is given on its own, not as a property",
}
_SET_OTHERWISE_ON_EDIT = {
    TABLE_NAME.name: "rename the table instead",
    TABLE_ONLINE.name: "put the table online or take it offline instead",
}


def _set_user_values(
    properties: TableProperties, values: Mapping[str, str | None], set_otherwise: Mapping[str, str]
) -> None:
    for name, value in values.items():
        why = set_otherwise.get(name)
        if why is not None:
            raise PropertyError(f"{name} cannot be given as a table property: {why}")
        properties.set(name, value)


def new_table_properties(
    instance_properties: InstanceProperties, *, name: str, table_id: str, schema: Schema, values: Mapping[str, str]
) -> TableProperties:
    """The properties of a new table: the values a user gave (``table create --property``), then its name, id and
    schema, all validated.

    The user's values follow the rule of :func:`edited_table_properties`: each names a known table property and holds
    a valid value. The name, id and schema are set by creating the table, so giving them as properties is refused.

    Raises:
        PropertyError: Naming the first unknown, invalid or refused property, or every problem found by
            ``validate_all``.
    """
    properties = TableProperties(instance_properties)
    _set_user_values(properties, values, _SET_OTHERWISE_ON_CREATE)
    properties.set(TABLE_NAME, name)
    properties.set(TABLE_ID, table_id)
    properties.set_schema(schema)
    properties.validate_all()
    return properties


def edited_table_properties(current: TableProperties, values: Mapping[str, str | None]) -> TableProperties:
    """A table's properties with the values a user set (``table properties --set``) or unset (a value of None,
    ``--unset``), validated; ``current`` is left as it was.

    Each value must name a known table property and be valid for it, as for :func:`new_table_properties`. The name
    and online state change only through a rename or putting the table online or offline, and the properties fixed
    at creation not at all (:func:`validate_table_update`).

    Raises:
        PropertyError: Naming the first unknown, invalid or refused property, or every problem found.
    """
    updated = current.copy()
    _set_user_values(updated, values, _SET_OTHERWISE_ON_EDIT)
    updated.validate_all()
    validate_table_update(current, updated)
    return updated


def validate_instance_update(old: InstanceProperties, new: InstanceProperties) -> None:
    """Checks that an update to a deployed instance changes none of the properties fixed at deployment.

    Those are the user-set instance properties that are not editable: ``sleeper.id``, ``sleeper.endpoint.url``,
    ``sleeper.vpc`` and ``sleeper.subnets``.

    Raises:
        PropertyError: Naming the first such property that changed.
    """
    for definition in INSTANCE_PROPERTY_INDEX:
        if definition.editable or definition.set_by_cdk:
            continue
        before = old.get(definition)
        after = new.get(definition)
        if before is not None and before != after:
            raise PropertyError(
                f"{definition.name} cannot be changed on a deployed instance (from {_short(before)} to {_short(after)})"
            )


def _same_schema(before: str, after: str) -> bool:
    try:
        return Schema.from_json(before) == Schema.from_json(after)
    except SleeperError:
        return False


def _short(value: str | None, limit: int = 80) -> str:
    if value is None:
        return "unset"
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 4] + "...'"
