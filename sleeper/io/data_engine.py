"""The data engine a table's files are merged and read with (``sleeper.table.data.engine``), one rule for compaction
and queries: ``ARROW`` (this port's pyarrow merge) or ``DATAFUSION`` (Apache DataFusion, with the ``datafusion``
extra), chosen from the table's property or its instance's default where either names one, else
:data:`DEFAULT_ENGINE`. Sleeper's ``JAVA`` reads as ``ARROW`` and ``DATAFUSION_EXPERIMENTAL`` as ``DATAFUSION``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from sleeper.io.datafusion import DATAFUSION_MISSING, datafusion_available
from sleeper.io.exceptions import DataEngineError, EngineUnavailableError

if TYPE_CHECKING:
    from sleeper.core.properties import TableProperties

__all__ = ["DATA_ENGINE_PROPERTY", "DEFAULT_ENGINE", "ENGINE_ARROW", "ENGINE_DATAFUSION", "resolve_engine"]

DATA_ENGINE_PROPERTY = "sleeper.table.data.engine"

ENGINE_ARROW = "ARROW"
"""The pyarrow merge (:func:`sleeper.io.merge.merge_sorted`)."""

ENGINE_DATAFUSION = "DATAFUSION"
"""Apache DataFusion's sort-preserving merge, if the ``datafusion`` package is installed."""

_ENGINE_NAMES = {
    "ARROW": ENGINE_ARROW,
    "JAVA": ENGINE_ARROW,
    "DATAFUSION": ENGINE_DATAFUSION,
    "DATAFUSION_EXPERIMENTAL": ENGINE_DATAFUSION,
}


DEFAULT_ENGINE = ENGINE_ARROW
"""The engine of a table (its compactions and queries) whose table and instance leave ``sleeper.table.data.engine``
at its built-in default.

Chosen by measurement (``benchmarks/compaction.py``, docs/performance.md "Compaction engines"): the pyarrow merge holds
a peak RSS of about 0.4-0.5 GB whatever the input size. DataFusion in this process keeps memory in proportion to the
rows it reads (0.8 GB at 10M rows, 1.2 GB at 20M); run in worker processes over key ranges
(``ExecutionSettings.datafusion_chunk_rows`` in :mod:`sleeper.compaction.execution`) its memory is flat but higher
(0.65-0.75 GB with the parent), and each worker's start and the batches streamed back cost CPU, so it used more CPU
than the pyarrow merge; queries measured the same way (docs/performance.md). Sleeper's own default is DATAFUSION; this
does not follow it. A table or instance that names ``DATAFUSION`` explicitly still gets it."""


def _engine_chosen(properties: TableProperties) -> bool:
    """Whether the table, or its instance's default, names a data engine explicitly."""
    from sleeper.core.properties import instance_defaults, table

    if properties.is_set(table.DATA_ENGINE):
        return True
    instance = getattr(properties, "instance_properties", None)
    return instance is not None and bool(instance.is_set(instance_defaults.DEFAULT_DATA_ENGINE))


def resolve_engine(properties: TableProperties | None, requested: str | None = None) -> str:
    """The engine a table's compactions and queries use: ``ARROW`` or ``DATAFUSION``.

    Args:
        properties: The table properties, whose ``sleeper.table.data.engine`` is used unless ``requested`` is given,
            if the table or its instance sets it; otherwise :data:`DEFAULT_ENGINE` (Sleeper's built-in default,
            ``DATAFUSION``, is not followed: see :data:`DEFAULT_ENGINE`).
        requested: An engine name (any of Sleeper's names, in any case) that overrides the table's.

    Returns:
        The engine asked for.

    Raises:
        DataEngineError: If the name is not an engine.
        EngineUnavailableError: If ``DATAFUSION`` is asked for and the ``datafusion`` extra is not installed.
    """
    name = requested
    if name is None and properties is not None and _engine_chosen(properties):
        name = properties.get(DATA_ENGINE_PROPERTY)
    key = (name or DEFAULT_ENGINE).strip().upper()
    engine = _ENGINE_NAMES.get(key)
    if engine is None:
        raise DataEngineError(f"unknown data engine {name!r}; expected one of {', '.join(_ENGINE_NAMES)}")
    if engine == ENGINE_DATAFUSION and not datafusion_available():
        raise EngineUnavailableError(DATAFUSION_MISSING)
    return engine
