"""The iterator contract (the analogue of Sleeper's ``ConfigStringIterator``) and the one loader of iterator classes.

An iterator transforms a stream of Arrow record batches sorted by row keys then sort keys: it may drop rows, combine
rows with equal keys or change values, but must keep the key order (the rows it yields are written to sorted files by
compactions and ingest). A class is an iterator when it can be built with no arguments and has the three methods of
:class:`SortedRowIterator`; it need not subclass anything.

Iterators are named as Sleeper names them in ``sleeper.table.iterator.class.name`` and a query's
``queryTimeIteratorClassName``: by a dotted path ``package.module.Class`` importable where the work runs (see
:mod:`sleeper.iterators.shipping` for getting code there on AWS), or by one of Sleeper's Java names for its built-in
and example iterators, which map to this package's own (:data:`JAVA_NAMES`, ``AGGREGATORS``). :func:`load_iterator`
is the only place a class name becomes an iterator; every failure is an :class:`IteratorLoadError` naming the class
and what is wrong, in one line.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, cast, runtime_checkable

from sleeper.core import Schema
from sleeper.iterators.exceptions import IteratorLoadError

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = [
    "AGGREGATORS",
    "JAVA_NAMES",
    "IteratorSpec",
    "SortedRowIterator",
    "load_iterator",
    "resolve_class_name",
]

AGGREGATORS = "AGGREGATORS"
"""Sleeper's keyword for filters and aggregations given in ``sleeper.table.iterator.config``, in the form
``<extra grouping fields>;<filter>,<aggregation>,...`` (e.g. ``;,sum(count),max(last_seen)``); matched in any case."""

_EXAMPLES = "sleeper.iterators.examples"
_BUILTIN = "sleeper.iterators.builtin"

JAVA_NAMES: Mapping[str, str] = {
    "sleeper.core.iterator.AgeOffIterator": f"{_BUILTIN}.AgeOffIterator",
    "sleeper.core.iterator.impl.AgeOffIterator": f"{_BUILTIN}.AgeOffIterator",
    "sleeper.example.iterator.AdditionIterator": f"{_EXAMPLES}.AdditionIterator",
    "sleeper.core.iterator.impl.AdditionIterator": f"{_EXAMPLES}.AdditionIterator",
    "sleeper.example.iterator.FixedAgeOffIterator": f"{_EXAMPLES}.FixedAgeOffIterator",
    "sleeper.example.iterator.SecurityFilteringIterator": f"{_EXAMPLES}.SecurityFilteringIterator",
    "sleeper.core.iterator.impl.SecurityFilteringIterator": f"{_EXAMPLES}.SecurityFilteringIterator",
}
"""Sleeper's Java class names of its built-in and example iterators, and the Python classes that behave the same."""

_METHODS = ("init", "required_value_fields", "apply")


@runtime_checkable
class SortedRowIterator(Protocol):
    """What an iterator class offers. Implement these three methods; subclassing is not needed.

    The stream an iterator sees holds the key columns, the value fields a query asked for and those named by
    :meth:`required_value_fields`; where rows are written (compaction, ingest, bulk import) it holds every field and
    the iterator must yield batches with the same columns and types. There is no guarantee which files of a partition
    are compacted together, or when, so what an iterator does must give the same rows however the data was split
    (commutative and associative, as Sleeper's iterators must be). Work a batch at a time with pyarrow compute: a
    compaction may pass hundreds of millions of rows through it.
    """

    def init(self, config: str, schema: Schema) -> None:
        """Configures the iterator; raise (any exception, with a message saying what is wrong) to refuse the config.

        Args:
            config: ``sleeper.table.iterator.config`` or the query's ``queryTimeIteratorConfig``; empty if unset.
            schema: The table schema.
        """
        ...

    def required_value_fields(self) -> list[str]:
        """The value fields the iterator reads, so a query reads them even when it did not ask for them."""
        ...

    def apply(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        """Transforms a stream of batches sorted by row keys then sort keys; rows with equal keys may span batches.

        Consume the input lazily (a generator), so memory stays bounded by a few batches.
        """
        ...


@dataclass(frozen=True, slots=True)
class IteratorSpec:
    """An iterator named in configuration: a class name and its config string.

    Attributes:
        class_name: A dotted path ``package.module.Class``, a Java name of :data:`JAVA_NAMES`, or ``AGGREGATORS``.
        config: The string passed to its ``init``; None passes an empty string.
        source: Where it was named, for error messages (a property name or ``queryTimeIteratorClassName``).
    """

    class_name: str
    config: str | None = None
    source: str = "iterator"

    @classmethod
    def optional(cls, class_name: str | None, config: str | None, source: str) -> IteratorSpec | None:
        """The spec for a class name that may be unset (None or blank gives None)."""
        if class_name is None or not class_name.strip():
            return None
        return cls(class_name.strip(), config, source)


def resolve_class_name(class_name: str) -> str:
    """The dotted path of the Python class a name stands for (a Java name maps to this package's class)."""
    if class_name.strip().upper() == AGGREGATORS:
        return f"{_BUILTIN}.AggregatorsIterator"
    return JAVA_NAMES.get(class_name, class_name)


def load_iterator(spec: IteratorSpec, schema: Schema) -> SortedRowIterator:
    """Imports an iterator class, builds it and initialises it with its config.

    Args:
        spec: The class name and config.
        schema: The table schema passed to ``init``.

    Returns:
        The initialised iterator.

    Raises:
        IteratorLoadError: If the module cannot be imported, it has no such class, the class lacks one of the three
            methods, cannot be built with no arguments, or its ``init`` raises; the message names the class, where
            it was set and the reason.
    """
    path = resolve_class_name(spec.class_name)
    where = f"{spec.source} {spec.class_name!r}"
    module_name, _, attribute = path.rpartition(".")
    if not module_name or not attribute:
        raise IteratorLoadError(f"{where}: expected a dotted path package.module.Class", part=spec.class_name)
    try:
        module = importlib.import_module(module_name)
    except Exception as e:  # an import can fail with anything the module raises
        raise IteratorLoadError(
            f"{where}: cannot import module {module_name!r} ({type(e).__name__}: {e}); install the package where "
            "the work runs (see docs/usage/iterators.md)",
            part=spec.class_name,
        ) from e
    cls = getattr(module, attribute, None)
    if cls is None:
        raise IteratorLoadError(f"{where}: module {module_name!r} has no class {attribute!r}", part=spec.class_name)
    if not inspect.isclass(cls):
        raise IteratorLoadError(f"{where}: {path} is not a class", part=spec.class_name)
    missing = [name for name in _METHODS if not callable(getattr(cls, name, None))]
    if missing:
        raise IteratorLoadError(
            f"{where}: {path} is not an iterator: it lacks {', '.join(missing)} (see SortedRowIterator)",
            part=spec.class_name,
        )
    try:
        iterator: Any = cls()
    except Exception as e:
        raise IteratorLoadError(f"{where}: {path}() failed: {type(e).__name__}: {e}", part=spec.class_name) from e
    try:
        iterator.init(spec.config or "", schema)
        fields = iterator.required_value_fields()
    except Exception as e:
        raise IteratorLoadError(
            f"{where}: config {spec.config or ''!r} refused: {_one_line(e)}", part=spec.config or ""
        ) from e
    if not isinstance(fields, (list, tuple)) or not all(isinstance(f, str) for f in fields):
        raise IteratorLoadError(f"{where}: required_value_fields() must return a list of field names, got {fields!r}")
    unknown = [f for f in fields if not schema.has_field(f)]
    if unknown:
        raise IteratorLoadError(
            f"{where}: it requires field {unknown[0]!r}, which the table does not have", part=unknown[0]
        )
    return cast(SortedRowIterator, iterator)


def _one_line(error: Exception) -> str:
    text = " ".join(str(error).split())
    if isinstance(error, IteratorLoadError | ValueError | KeyError) or type(error).__module__.startswith("sleeper."):
        return text or type(error).__name__
    return f"{type(error).__name__}: {text}"
