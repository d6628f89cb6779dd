"""The layout rows and split properties of the Athena connectors: the files a split reads, the leaf's key bounds,
the regions a shared file is read within, and the pending row deletes a leaf split carries (beyond Sleeper), written by
the metadata handler and read back by the record handler (:mod:`sleeper.athena.handlers`)."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator, Mapping, Sequence

import pyarrow as pa

from sleeper.athena.exceptions import INVALID_INPUT, AthenaConnectorError
from sleeper.core import Field, FilterError, KeyValue, Partition, PrimitiveType, Schema
from sleeper.core.statestore import filters_of_each
from sleeper.iterators import DeletedRows
from sleeper.statestore import SleeperTable

__all__ = [
    "FILE_REGIONS_FIELD",
    "MAX_ROW_KEY_PREFIX",
    "MIN_ROW_KEY_PREFIX",
    "PENDING_DELETES_FIELD",
    "RELEVANT_FILES_FIELD",
    "file_split_properties",
    "from_json_value",
    "hidden_rows_removed",
    "json_value",
    "leaf_bounds",
    "leaf_split_properties",
    "parse_file_regions",
    "property_text",
    "property_value",
    "row_files",
    "split_hides",
]

RELEVANT_FILES_FIELD = "_SleeperRelevantFiles"
"""Layout column and split property: the files to read (a JSON list, or one path in a simple split)."""
MIN_ROW_KEY_PREFIX = "_MinRowKey"
"""Prefix of the layout columns and split properties holding a leaf's minimum per row key (``_MinRowKey-<field>``)."""
MAX_ROW_KEY_PREFIX = "_MaxRowKey"
"""Prefix of the layout columns and split properties holding a leaf's maximum per row key (absent = unbounded)."""
FILE_REGIONS_FIELD = "_SleeperFileRegions"
"""Simple split property: JSON list of the leaf bounds a file is read within."""
PENDING_DELETES_FIELD = "_SleeperPendingDeletes"
"""Iterator-applying layout column and split property, beyond Sleeper: the filters of the table's pending row deletes
that hide rows of the leaf's files, by file (a JSON object; null or absent when none hide any)."""


def leaf_bounds(partition: Partition, schema: Schema) -> dict[str, tuple[KeyValue, KeyValue | None]]:
    out: dict[str, tuple[KeyValue, KeyValue | None]] = {}
    for f in schema.row_key_fields:
        r = partition.region.range(f.name)
        out[f.name] = (f.primitive_type.minimum, None) if r is None else (r.canonical_min, r.canonical_max)
    return out


def property_text(value: KeyValue) -> str:
    if isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")
    return str(value)


def property_value(text: str, f: Field) -> KeyValue:
    t = f.primitive_type
    try:
        if t in (PrimitiveType.INT, PrimitiveType.LONG):
            return int(text)
        if t is PrimitiveType.BYTE_ARRAY:
            return base64.b64decode(text, validate=True)
    except ValueError:
        raise AthenaConnectorError(f"split bound {text!r} does not suit {f.name!r}", error_code=INVALID_INPUT) from None
    return text


def json_value(value: KeyValue | None) -> object:
    if isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")
    return value


def from_json_value(value: object, f: Field) -> KeyValue:
    if f.primitive_type is PrimitiveType.BYTE_ARRAY and isinstance(value, str):
        return base64.b64decode(value, validate=True)
    if isinstance(value, int | str) and not isinstance(value, bool):
        return value
    raise AthenaConnectorError(f"split bound {value!r} does not suit {f.name!r}", error_code=INVALID_INPUT)


def row_files(row: Mapping[str, object]) -> list[str]:
    raw = row.get(RELEVANT_FILES_FIELD)
    try:
        files = json.loads(str(raw))
    except (TypeError, ValueError):
        raise AthenaConnectorError(
            f"partition row has invalid {RELEVANT_FILES_FIELD}: {raw!r}", error_code=INVALID_INPUT
        ) from None
    if not isinstance(files, list) or not all(isinstance(f, str) for f in files):
        raise AthenaConnectorError(f"{RELEVANT_FILES_FIELD} must be a JSON list of paths", error_code=INVALID_INPUT)
    return files


def leaf_split_properties(row: Mapping[str, object], schema: Schema) -> dict[str, str]:
    properties = {RELEVANT_FILES_FIELD: json.dumps(row_files(row))}
    hidden = row.get(PENDING_DELETES_FIELD)
    if hidden is not None:
        properties[PENDING_DELETES_FIELD] = str(hidden)
    for f in schema.row_key_fields:
        for prefix in (MIN_ROW_KEY_PREFIX, MAX_ROW_KEY_PREFIX):
            name = f"{prefix}-{f.name}"
            value = row.get(name)
            if value is not None:
                assert isinstance(value, int | str | bytes)
                properties[name] = property_text(value)
    return properties


def file_split_properties(rows: Sequence[Mapping[str, object]], schema: Schema) -> list[dict[str, str]]:
    regions_by_file: dict[str, list[dict[str, list[object]]]] = {}
    for row in rows:
        region: dict[str, list[object]] = {}
        for f in schema.row_key_fields:
            low = row.get(f"{MIN_ROW_KEY_PREFIX}-{f.name}")
            high = row.get(f"{MAX_ROW_KEY_PREFIX}-{f.name}")
            region[f.name] = [json_value(low if low is not None else f.primitive_type.minimum), json_value(high)]  # type: ignore[arg-type]
        for file in row_files(row):
            regions_by_file.setdefault(file, []).append(region)
    return [
        {RELEVANT_FILES_FIELD: file, FILE_REGIONS_FIELD: json.dumps(regions)}
        for file, regions in sorted(regions_by_file.items())
    ]


def split_hides(raw: str | None, table: SleeperTable, files: Sequence[str]) -> dict[str, DeletedRows]:
    """The rows of each file of a leaf split that pending row deletes hide: those the split carries (the deletes when
    the layout was made, which still cover a file compacted away since) and those the table's state has now for the
    files still in it, so a split written without them hides the rows anyway."""
    carried: dict[str, tuple[str, ...]] = {}
    if raw is not None:
        try:
            parsed = json.loads(raw)
        except ValueError:
            parsed = None
        if not isinstance(parsed, dict) or not all(
            isinstance(v, list) and all(isinstance(x, str) for x in v) for v in parsed.values()
        ):
            raise AthenaConnectorError(
                f"{PENDING_DELETES_FIELD} must be a JSON object of filter lists by file", error_code=INVALID_INPUT
            )
        carried = {str(k): tuple(v) for k, v in parsed.items()}
    current = filters_of_each(table.state_store.pending_deletes(), [files])[0]
    merged = {name: tuple(dict.fromkeys([*carried.get(name, ()), *current.get(name, ())])) for name in files}
    try:
        return DeletedRows.by_file({name: texts for name, texts in merged.items() if texts}, table.schema)
    except FilterError as e:
        raise AthenaConnectorError(f"{PENDING_DELETES_FIELD}: {e}", error_code=INVALID_INPUT) from None


def hidden_rows_removed(batches: Iterator[pa.RecordBatch], hide: DeletedRows | None) -> Iterator[pa.RecordBatch]:
    return batches if hide is None else hide.apply(batches)


def parse_file_regions(text: str, schema: Schema) -> list[dict[str, tuple[KeyValue, KeyValue | None]]]:
    try:
        raw = json.loads(text)
    except ValueError:
        raise AthenaConnectorError(f"invalid {FILE_REGIONS_FIELD}", error_code=INVALID_INPUT) from None
    if not isinstance(raw, list):
        raise AthenaConnectorError(f"{FILE_REGIONS_FIELD} must be a JSON list", error_code=INVALID_INPUT)
    out: list[dict[str, tuple[KeyValue, KeyValue | None]]] = []
    for item in raw:
        if not isinstance(item, dict):
            raise AthenaConnectorError(f"{FILE_REGIONS_FIELD} entries must be objects", error_code=INVALID_INPUT)
        bounds: dict[str, tuple[KeyValue, KeyValue | None]] = {}
        for f in schema.row_key_fields:
            pair = item.get(f.name) or [f.primitive_type.minimum, None]
            if not isinstance(pair, list) or len(pair) != 2:
                raise AthenaConnectorError(
                    f"{FILE_REGIONS_FIELD} bound of {f.name!r} is not [min, max]", error_code=INVALID_INPUT
                )
            low = from_json_value(pair[0], f)
            high = None if pair[1] is None else from_json_value(pair[1], f)
            bounds[f.name] = (low, high)
        out.append(bounds)
    return out
