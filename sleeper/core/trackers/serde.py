"""The JSON of tracker updates, kept by durable adapters (SQLite, DynamoDB ``UpdateBody``)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import fields
from datetime import datetime
from typing import Any, TypeVar

from sleeper.core.exceptions import SerDeError
from sleeper.core.trackers.base import TrackerError
from sleeper.core.trackers.compaction import (
    CompactionJobCommitted,
    CompactionJobCreated,
    CompactionJobFailed,
    CompactionJobFinished,
    CompactionJobStarted,
    CompactionJobUpdate,
)
from sleeper.core.trackers.ingest import (
    IngestJobAddedFiles,
    IngestJobFailed,
    IngestJobFinished,
    IngestJobStarted,
    IngestJobUpdate,
    IngestJobValidated,
)
from sleeper.core.trackers.task import TaskFinished, TaskStarted, TaskUpdate

JobUpdate = IngestJobUpdate | CompactionJobUpdate

INGEST_UPDATE_TYPES: dict[str, type[IngestJobUpdate]] = {
    "validated": IngestJobValidated,
    "started": IngestJobStarted,
    "addedFiles": IngestJobAddedFiles,
    "finished": IngestJobFinished,
    "failed": IngestJobFailed,
}
COMPACTION_UPDATE_TYPES: dict[str, type[CompactionJobUpdate]] = {
    "created": CompactionJobCreated,
    "started": CompactionJobStarted,
    "finished": CompactionJobFinished,
    "committed": CompactionJobCommitted,
    "failed": CompactionJobFailed,
}
TASK_UPDATE_TYPES: dict[str, type[TaskUpdate]] = {"started": TaskStarted, "finished": TaskFinished}

_TYPE_NAMES: dict[type, str] = {
    cls: name
    for mapping in (INGEST_UPDATE_TYPES, COMPACTION_UPDATE_TYPES, TASK_UPDATE_TYPES)
    for name, cls in mapping.items()
}


def update_type_name(update: JobUpdate | TaskUpdate) -> str:
    """Sleeper's ``UpdateType`` name of an update (``validated``, ``addedFiles``, ``committed``, ...)."""
    return _TYPE_NAMES[type(update)]


def update_to_json(update: JobUpdate | TaskUpdate) -> str:
    """JSON of an update: its type name under ``"type"``, its fields by name, times in ISO 8601."""
    document: dict[str, Any] = {"type": update_type_name(update)}
    for item in fields(update):
        value = getattr(update, item.name)
        if isinstance(value, datetime):
            value = value.isoformat()
        elif isinstance(value, tuple):
            value = list(value)
        document[item.name] = value
    return json.dumps(document, separators=(",", ":"))


def ingest_update_from_json(text: str) -> IngestJobUpdate:
    """Reads an ingest job update written by ``update_to_json``.

    Raises:
        SerDeError: If the JSON is not an ingest job update.
    """
    update: IngestJobUpdate = _from_json(text, INGEST_UPDATE_TYPES)
    return update


def compaction_update_from_json(text: str) -> CompactionJobUpdate:
    """Reads a compaction job update written by ``update_to_json``.

    Raises:
        SerDeError: If the JSON is not a compaction job update.
    """
    update: CompactionJobUpdate = _from_json(text, COMPACTION_UPDATE_TYPES)
    return update


def task_update_from_json(text: str) -> TaskUpdate:
    """Reads a task update written by ``update_to_json``.

    Raises:
        SerDeError: If the JSON is not a task update.
    """
    update: TaskUpdate = _from_json(text, TASK_UPDATE_TYPES)
    return update


_T = TypeVar("_T")


def _from_json(text: str, types: Mapping[str, type[_T]]) -> _T:
    try:
        document = json.loads(text)
        cls = types[document.pop("type")]
        names = {item.name for item in fields(cls)}  # type: ignore[arg-type]
        unknown = set(document) - names
        if unknown:
            raise SerDeError(f"unknown fields {sorted(unknown)} in {cls.__name__}")
        if "update_time" in document:
            document["update_time"] = datetime.fromisoformat(document["update_time"])
        if "reasons" in document:
            document["reasons"] = tuple(document["reasons"])
        return cls(**document)
    except SerDeError:
        raise
    except (ValueError, KeyError, TypeError, AttributeError, TrackerError) as error:
        raise SerDeError(f"invalid tracker update JSON: {error}") from error
