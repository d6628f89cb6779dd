"""How a property is defined: name, description, default, validation, group, and how it falls back to others.

Each property is defined once, in one of the ``instance_*`` modules or in ``table``, and everything else (lookups,
validation, saving in definition order, the generated docs under ``docs/usage/properties``) is driven by those
definitions. Names and defaults are Sleeper's (``java/core/.../properties``) so that configuration written by Java
Sleeper, and read by Sleeper's own Python client, means the same here.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Any

from sleeper.core.exceptions import PropertyError
from sleeper.core.properties.validation import ANY_TEXT, Validator


@dataclass(frozen=True, slots=True, kw_only=True)
class PropertyGroup:
    """A group of related properties, documented on one page.

    Attributes:
        slug: The group's file name in the docs, e.g. ``garbage_collector``.
        title: The human-readable name, e.g. ``Garbage Collector``.
        description: One sentence saying what the properties in the group are about.
    """

    slug: str
    title: str
    description: str


class InstancePropertyGroup:
    """The groups of instance properties, as in Sleeper's ``InstancePropertyGroup``."""

    COMMON = PropertyGroup(slug="common", title="Common", description="Instance properties used throughout Sleeper.")
    TABLE_STATE = PropertyGroup(
        slug="table_state",
        title="Table State",
        description="Instance properties about holding and updating the state of Sleeper tables.",
    )
    INGEST = PropertyGroup(
        slug="ingest", title="Ingest", description="Instance properties about standard ingest and the ingest batcher."
    )
    BULK_EXPORT = PropertyGroup(
        slug="bulk_export", title="Bulk Export", description="Instance properties about bulk export."
    )
    BULK_IMPORT = PropertyGroup(
        slug="bulk_import",
        title="Bulk Import",
        description="Instance properties about bulk import: ingesting data with Spark jobs on EMR Serverless or EMR.",
    )
    PARTITION_SPLITTING = PropertyGroup(
        slug="partition_splitting",
        title="Partition Splitting",
        description="Instance properties about splitting partitions.",
    )
    GARBAGE_COLLECTOR = PropertyGroup(
        slug="garbage_collector",
        title="Garbage Collector",
        description="Instance properties about deleting files that are no longer referenced.",
    )
    COMPACTION = PropertyGroup(
        slug="compaction", title="Compaction", description="Instance properties about compaction."
    )
    QUERY = PropertyGroup(slug="query", title="Query", description="Instance properties about queries.")
    METRICS = PropertyGroup(slug="metrics", title="Metrics", description="Instance properties about metrics.")
    LOGGING = PropertyGroup(slug="logging", title="Logging", description="Instance properties about logging.")
    ATHENA = PropertyGroup(
        slug="athena", title="Athena", description="Instance properties about the integration with Amazon Athena."
    )
    TABLE_PROPERTY_DEFAULTS = PropertyGroup(
        slug="table_property_defaults",
        title="Table Property Defaults",
        description="Instance properties giving the defaults of table properties.",
    )

    ALL: tuple[PropertyGroup, ...] = (
        COMMON,
        TABLE_STATE,
        INGEST,
        BULK_EXPORT,
        BULK_IMPORT,
        PARTITION_SPLITTING,
        GARBAGE_COLLECTOR,
        COMPACTION,
        QUERY,
        METRICS,
        LOGGING,
        ATHENA,
        TABLE_PROPERTY_DEFAULTS,
    )


class TablePropertyGroup:
    """The groups of table properties, as in Sleeper's ``TablePropertyGroup``."""

    DATA_DEFINITION = PropertyGroup(
        slug="data_definition", title="Data Definition", description="Table properties defining the data in a table."
    )
    PARTITION_SPLITTING = PropertyGroup(
        slug="partition_splitting",
        title="Partition Splitting",
        description="Table properties about partition splitting.",
    )
    DATA_STORAGE = PropertyGroup(
        slug="data_storage", title="Data Storage", description="Table properties about how a table's data is stored."
    )
    COMPACTION = PropertyGroup(slug="compaction", title="Compaction", description="Table properties about compaction.")
    METADATA = PropertyGroup(
        slug="metadata",
        title="Metadata",
        description="Table properties about storing and reading a table's metadata (its state store).",
    )
    INGEST = PropertyGroup(slug="ingest", title="Ingest", description="Table properties about ingest.")
    BULK_IMPORT = PropertyGroup(
        slug="bulk_import",
        title="Bulk Import",
        description="Table properties about bulk import: ingesting data with Spark jobs on EMR Serverless or EMR.",
    )
    INGEST_BATCHER = PropertyGroup(
        slug="ingest_batcher", title="Ingest Batcher", description="Table properties about the ingest batcher."
    )
    QUERY_EXECUTION = PropertyGroup(
        slug="query_execution", title="Query Execution", description="Table properties about running queries."
    )

    ALL: tuple[PropertyGroup, ...] = (
        DATA_DEFINITION,
        PARTITION_SPLITTING,
        DATA_STORAGE,
        COMPACTION,
        METADATA,
        INGEST,
        BULK_IMPORT,
        INGEST_BATCHER,
        QUERY_EXECUTION,
    )


class DefaultRule(Enum):
    """How an unset property gets its value.

    Attributes:
        FALLBACK: The property named in ``default_property`` if there is one, otherwise the built-in default.
        ASYNC_COMMIT_FOR_UPDATE: A table's switch for committing one kind of state store update asynchronously. Unset,
            it is the instance default (``default_property``) and ``sleeper.table.statestore.commit.async.enabled``;
            set, it is the value and, if that is also set on the table, ``...commit.async.enabled``.
        ASYNC_COMMIT_ENABLED: ``sleeper.table.statestore.commit.async.enabled``: unset, it follows the instance's
            ``sleeper.default.table.statestore.commit.async.behaviour``: ``DISABLED`` is false, ``ALL_IMPLEMENTATIONS``
            is true, ``PER_IMPLEMENTATION`` is true for transaction log state stores.
    """

    FALLBACK = "fallback"
    ASYNC_COMMIT_FOR_UPDATE = "async_commit_for_update"
    ASYNC_COMMIT_ENABLED = "async_commit_enabled"


@dataclass(frozen=True, slots=True, kw_only=True)
class PropertyDefinition:
    """The definition of one instance or table property.

    Attributes:
        name: The property name, e.g. ``sleeper.table.gc.delay.minutes``.
        description: What the property does, for users.
        group: The group it is documented in.
        default: The built-in default value, or None if there is none.
        validation: Checks a value; applied when a value is set and by ``validate_all``.
        set_by_cdk: True for system-defined properties that only a deployment sets (bucket names, queue URLs,
            DynamoDB table names). Users do not set them; they are not validated.
        editable: False if the property may not be changed once the instance or table exists.
        required: True if the property must have a value (set, or by default) for the properties to be valid.
        redeploy: True if changing the property only takes effect after deploying the instance again.
        default_property: The property an unset value falls back to. For a table property this is usually the
            instance property ``sleeper.default.table.…``; it may name another table property.
        default_rule: How an unset value is worked out; see ``DefaultRule``.
        ignore_empty: If True an empty value counts as unset, as in Sleeper.
        not_used: Why this port does not use the property (it is accepted, kept and documented so that Sleeper's
            configuration loads unchanged), or None if it is used. The docs say so and setting it warns.
        refused: With ``not_used``: any value is refused (``problem`` names the property and why), for settings
            whose silent omission would weaken security, such as an encryption key the port would not use.
    """

    name: str
    description: str
    group: PropertyGroup
    default: str | None = None
    validation: Validator = ANY_TEXT
    set_by_cdk: bool = False
    editable: bool = True
    required: bool = False
    redeploy: bool = False
    default_property: str | None = None
    default_rule: DefaultRule = DefaultRule.FALLBACK
    ignore_empty: bool = True
    not_used: str | None = None
    refused: bool = False

    def __post_init__(self) -> None:
        if self.refused and not self.not_used:
            raise PropertyError(f"property {self.name} is refused but says nothing of why it is not used")

    @property
    def used(self) -> bool:
        """Whether this port does something with the property's value."""
        return self.not_used is None

    def problem(self, value: str | None) -> str | None:
        """Says what is wrong with a value of this property, or returns None if it is acceptable.

        Args:
            value: The value, or None if the property has no value.

        Returns:
            A one-line message naming the property and the value, or None.
        """
        if value is None or (self.ignore_empty and value == ""):
            return f"{self.name} must be set" if self.required else None
        if self.refused:
            return f"{self.name} is not supported by this port ({self.not_used}): unset it"
        problem = self.validation.problem(value)
        if problem is None:
            return None
        return f"{self.name}: invalid value {_shorten(value)}, {problem}"

    def check(self, value: str | None) -> None:
        """Checks a value of this property.

        Raises:
            PropertyError: If the value is not acceptable; the message names the property and the value.
        """
        problem = self.problem(value)
        if problem is not None:
            raise PropertyError(problem)


def _shorten(value: str, limit: int = 120) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 4] + "...'"


class PropertyIndex:
    """The properties of one kind (instance or table), in definition order, looked up by name."""

    def __init__(self, definitions: Iterable[PropertyDefinition], groups: Sequence[PropertyGroup]) -> None:
        """Indexes definitions.

        Args:
            definitions: The definitions, in the order they should be listed and saved.
            groups: The groups, in the order they should be documented.

        Raises:
            PropertyError: If two definitions share a name, or a definition's group is not among the groups.
        """
        self._by_name: dict[str, PropertyDefinition] = {}
        for definition in definitions:
            if definition.name in self._by_name:
                raise PropertyError(f"property {definition.name} is defined twice")
            if definition.group not in groups:
                raise PropertyError(f"property {definition.name} is in unknown group {definition.group.slug}")
            self._by_name[definition.name] = definition
        self._groups = tuple(groups)

    @property
    def groups(self) -> tuple[PropertyGroup, ...]:
        """The groups, in documentation order."""
        return self._groups

    def get(self, name: str) -> PropertyDefinition | None:
        """The definition with this name, or None if there is none."""
        return self._by_name.get(name)

    def __getitem__(self, name: str) -> PropertyDefinition:
        """The definition with this name.

        Raises:
            PropertyError: If no property has this name.
        """
        definition = self._by_name.get(name)
        if definition is None:
            raise PropertyError(f"unknown property {name}")
        return definition

    def __contains__(self, name: object) -> bool:
        """Whether a property has this name."""
        return name in self._by_name

    def __iter__(self) -> Iterator[PropertyDefinition]:
        """The definitions in definition order."""
        return iter(self._by_name.values())

    def __len__(self) -> int:
        """The number of definitions."""
        return len(self._by_name)

    def names(self) -> tuple[str, ...]:
        """The property names in definition order."""
        return tuple(self._by_name)

    def in_group(self, group: PropertyGroup) -> tuple[PropertyDefinition, ...]:
        """The definitions in a group: user-set ones in definition order, then those a deployment sets."""
        members = [d for d in self._by_name.values() if d.group == group]
        return tuple([d for d in members if not d.set_by_cdk] + [d for d in members if d.set_by_cdk])


_NODES = (("master", "master node"), ("executor", "executor nodes"))


class PropertyList:
    """Collects definitions in the order a module declares them; a helper for the definition modules."""

    def __init__(self, group: PropertyGroup) -> None:
        """Starts a list whose definitions are in ``group`` unless told otherwise."""
        self._group = group
        self._items: list[PropertyDefinition] = []

    def user(
        self,
        name: str,
        description: str,
        *,
        default: str | None = None,
        validation: Validator = ANY_TEXT,
        group: PropertyGroup | None = None,
        editable: bool = True,
        required: bool = False,
        redeploy: bool = False,
        falls_back_to: PropertyDefinition | None = None,
        default_rule: DefaultRule = DefaultRule.FALLBACK,
        ignore_empty: bool = True,
        not_used: str | None = None,
        refused: bool = False,
    ) -> PropertyDefinition:
        """Defines a property that users set.

        With ``falls_back_to``, the property takes that property's value when unset, and its default and validation
        unless given here. ``not_used`` says why this port does nothing with it (see ``PropertyDefinition``).
        """
        if falls_back_to is not None:
            default = falls_back_to.default if default is None else default
            validation = falls_back_to.validation if validation is ANY_TEXT else validation
        definition = PropertyDefinition(
            name=name,
            description=description,
            group=group or self._group,
            default=default,
            validation=validation,
            editable=editable,
            required=required,
            redeploy=redeploy,
            default_property=None if falls_back_to is None else falls_back_to.name,
            default_rule=default_rule,
            ignore_empty=ignore_empty,
            not_used=not_used,
            refused=refused,
        )
        self._items.append(definition)
        return definition

    def cdk(
        self, name: str, description: str, *, group: PropertyGroup | None = None, not_used: str | None = None
    ) -> PropertyDefinition:
        """Defines a system-defined property that only a deployment sets (``not_used``: why this port's deployment
        never sets it)."""
        definition = PropertyDefinition(
            name=name, description=description, group=group or self._group, set_by_cdk=True, not_used=not_used
        )
        self._items.append(definition)
        return definition

    def queue(
        self, prefix: str, what: str, *, dlq: str = "dlq", group: PropertyGroup | None = None
    ) -> tuple[PropertyDefinition, PropertyDefinition, PropertyDefinition, PropertyDefinition]:
        """Defines the four deployment-set properties of an SQS queue and its dead letter queue.

        Args:
            prefix: The name before ``.queue.url``, e.g. ``sleeper.compaction.job``.
            what: What the queue holds, e.g. ``compaction jobs``.
            dlq: The name part of the dead letter queue, e.g. ``dlq`` gives ``<prefix>.dlq.url``.
            group: The group, if not the list's.

        Returns:
            The queue URL, queue ARN, dead letter queue URL and dead letter queue ARN properties.
        """
        return (
            self.cdk(f"{prefix}.queue.url", f"The URL of the queue of {what}.", group=group),
            self.cdk(f"{prefix}.queue.arn", f"The ARN of the queue of {what}.", group=group),
            self.cdk(f"{prefix}.{dlq}.url", f"The URL of the dead letter queue of {what}.", group=group),
            self.cdk(f"{prefix}.{dlq}.arn", f"The ARN of the dead letter queue of {what}.", group=group),
        )

    def instance_types(
        self,
        prefix: str,
        describe: Callable[[str], str],
        *,
        defaults: Sequence[str | None] = (None,) * 4,
        falls_back_to: Sequence[PropertyDefinition | None] = (None,) * 4,
        **common: Any,
    ) -> tuple[PropertyDefinition, ...]:
        """Defines (:meth:`user`) the four instance type properties of an EMR cluster's nodes in Sleeper's order,
        ``<prefix>.master.x86.instance.types``, ``.executor.x86.``, ``.master.arm.``, ``.executor.arm.``: ``describe``
        makes each description from what it holds, ``defaults`` and ``falls_back_to`` give each its own, and the
        ``common`` arguments are the same for the four."""
        roles = [(f"{n}.{a}", arch, node) for a, arch in (("x86", "x86_64"), ("arm", "ARM64")) for n, node in _NODES]
        return tuple(
            self.user(
                f"{prefix}.{role}.instance.types",
                describe(f"{arch} instance types (each optionally followed by a weight) of the {node}."),
                default=default,
                falls_back_to=fallback,
                **common,
            )
            for (role, arch, node), default, fallback in zip(roles, defaults, falls_back_to, strict=True)
        )

    def all(self) -> tuple[PropertyDefinition, ...]:
        """The definitions collected so far, in order."""
        return tuple(self._items)
