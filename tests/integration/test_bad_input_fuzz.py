"""Bad input fuzzing (docs/reliability.md): Hypothesis over every message schema, schema-derived then mutated.

Each message type starts from Sleeper's approved JSON (``tests/approvals/messages``: ingest, bulk import, compaction
job, batch, dispatch and commit, state store committer requests, split job, query, sub-query, bulk export), and a value
anywhere in it is replaced (by another JSON value, a path traversal, a huge or control-character string, a huge
number) or removed, an unknown field is added, the whole body is replaced, or the text is cut short. Two levels:

* **reader**: the message's reader returns it or raises a typed error (a ``SleeperError``); anything else (a
  ``KeyError``, ``TypeError``...) is an unhandled exception.
* **entry**: on a local instance whose table ``fuzz`` holds rows, the message goes through its queue's feature entry
  (the handler the runner and the Lambdas run), with its table renamed to ``fuzz`` so it gets past the table lookup.
  The entry returns a line (work done, or the message rejected and recorded) or raises a ``SleeperError`` (the
  message is retried, then dead-lettered); an ``OSError`` (a store or filesystem out of reach, which the batcher
  documents as retried: a relative path on a local instance is an S3 ``bucket/key``, and this machine has no network)
  is counted apart; any other exception is unhandled. The table's rows (count and checksum)
  must be unchanged after every message. The GC, snapshot, split-finder and job-creation queues, whose body is a table
  id, get mutated ids.

CI runs a bounded number per message type; the nightly profile (``SLEEPER_NIGHTLY=1``) runs 10,070 mutated values
(530 per message type) at the reader level and 200 per queue at the entry level. Figures: examples, typed
rejections, accepted, unhandled (=0), per message type.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sleeper.core import operations
from sleeper.core.exceptions import SleeperError
from sleeper.core.schema import Field, PrimitiveType, Schema
from sleeper.runtime.local.handlers import default_handlers
from sleeper.runtime.local.instance import LocalInstance
from tests.model.invariants import checksum, rows_of
from tests.reliability_report import NIGHTLY, Reliability
from tests.unit.core.jobs.test_approvals import APPROVALS, CODECS

pytestmark = pytest.mark.integration

READER_EXAMPLES = 530 if NIGHTLY else 30
ENTRY_EXAMPLES = 200 if NIGHTLY else 15

# --- mutations --------------------------------------------------------------------------------------------------------
NASTY_STRINGS = st.sampled_from(
    [
        "",
        " ",
        "..",
        "../../../etc/passwd",
        "%2e%2e/%2e%2e/secret",
        "/etc/passwd",
        "file:///etc/passwd",
        "s3://other-bucket/key.parquet",
        "s3a://../x",
        "a\x00b",
        "a\\b\\c",
        "x" * 5000,
        "\U0001f600",
        "0a1b2c3d/../other",
        "null",
        "NaN",
        "-1",
        "1e400",
    ]
)
SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=30),
    NASTY_STRINGS,
)
JSON_VALUES = st.recursive(
    SCALARS,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=10), children, max_size=4),
    max_leaves=10,
)

Path_ = tuple[str | int, ...]


def _paths(value: Any, prefix: Path_ = ()) -> Iterator[Path_]:
    yield prefix
    if isinstance(value, dict):
        for key, child in value.items():
            yield from _paths(child, (*prefix, key))
    elif isinstance(value, list):
        for index, child in enumerate(value):
            yield from _paths(child, (*prefix, index))


def _replaced(value: Any, path: Path_, new: Any, *, delete: bool = False) -> Any:
    if not path:
        return new
    head, rest = path[0], path[1:]
    if isinstance(value, dict):
        copy = dict(value)
        if not rest and delete:
            copy.pop(head, None)
        else:
            copy[head] = _replaced(copy[head], rest, new, delete=delete)
        return copy
    copy_list = list(value)
    if not rest and delete:
        del copy_list[int(head)]
    else:
        copy_list[int(head)] = _replaced(copy_list[int(head)], rest, new, delete=delete)
    return copy_list


@st.composite
def mutated(draw: st.DrawFn, base: Any) -> str:
    """A mutation of ``base`` as JSON text."""
    kind = draw(st.sampled_from(["replace", "replace", "replace", "delete", "unknown field", "whole", "cut"]))
    paths = list(_paths(base))
    if kind == "whole":
        return json.dumps(draw(JSON_VALUES))
    if kind == "cut":
        text = json.dumps(base)
        return text[: draw(st.integers(0, max(0, len(text) - 1)))]
    if kind == "unknown field" and isinstance(base, dict):
        return json.dumps({**base, draw(st.text(min_size=1, max_size=10)): draw(JSON_VALUES)})
    path = draw(st.sampled_from(paths[1:] if len(paths) > 1 else paths))
    if kind == "delete" and path:
        return json.dumps(_replaced(base, path, None, delete=True))
    return json.dumps(_replaced(base, path, draw(JSON_VALUES)), allow_nan=True)


# --- the reader level -------------------------------------------------------------------------------------------------
def _settings(examples: int) -> settings:
    return settings(
        max_examples=examples,
        deadline=None,
        derandomize=not NIGHTLY,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.function_scoped_fixture],
    )


@pytest.mark.parametrize("name", sorted(CODECS))
def should_read_or_refuse_with_a_typed_error_every_mutated_message(name: str, reliability: Reliability) -> None:
    read, _ = CODECS[name]
    base = json.loads((APPROVALS / name).read_text())
    tally: Counter[str] = Counter()
    unhandled: list[str] = []

    @given(text=mutated(base))
    @_settings(READER_EXAMPLES)
    def run(text: str) -> None:
        tally["examples"] += 1
        try:
            read(text)
        except SleeperError as e:
            tally[f"refused:{type(e).__name__}"] += 1
            assert str(e), "a refusal without a message"
        except RecursionError:
            tally["refused:RecursionError"] += 1  # nesting deeper than Python's limit: refused as json does
            unhandled.append(f"RecursionError on {text[:120]!r}")
        except Exception as e:
            unhandled.append(f"{type(e).__name__}: {e} on {text[:200]!r}")
        else:
            tally["accepted"] += 1

    run()
    reliability.record(
        "E",
        level="reader",
        message=name,
        examples=tally["examples"],
        accepted=tally["accepted"],
        refused_typed=sum(n for k, n in tally.items() if k.startswith("refused:")),
        refusals={k.removeprefix("refused:"): n for k, n in sorted(tally.items()) if k.startswith("refused:")},
        unhandled_exceptions=len(unhandled),
    )
    assert unhandled == [], unhandled[:5]


# --- the entry level --------------------------------------------------------------------------------------------------
SCHEMA = Schema.of(row_keys=[Field("key", PrimitiveType.INT)], values=[Field("value1", PrimitiveType.LONG)])
TABLE = "fuzz"

ENTRY_BASES: dict[str, str | dict[str, Any]] = {
    operations.INGEST_JOB_Q: "ingest-job.json",
    operations.INGEST_BATCHER_SUBMIT_Q: {"tableName": TABLE, "files": ["/tmp/sleeper-fuzz-missing/rows.parquet"]},
    operations.LEAF_PARTITION_BULK_EXPORT_Q: "bulk-export-leaf-partition-query.json",
    operations.COMPACTION_JOB_Q: "compaction-job-no-iterator.json",
    operations.STATE_STORE_COMMITTER_Q: "statestore-commit-add-files.json",
    operations.COMPACTION_COMMIT_Q: "compaction-commit-request.json",
    operations.PENDING_COMPACTION_JOB_BATCH_Q: "compaction-dispatch-request.json",
    operations.PARTITION_SPLITTING_JOB_Q: "split-partition-job.json",
    operations.QUERY_Q: "query-all-fields.json",
    operations.LEAF_PARTITION_QUERY_Q: "leaf-partition-query-all-fields.json",
}
"""Queues whose messages are JSON, with the approved message each starts from."""
TABLE_ID_QUEUES = (
    operations.GC_JOB_Q,
    operations.SNAPSHOT_CREATION_Q,
    operations.FIND_PARTITIONS_TO_SPLIT_Q,
    operations.COMPACTION_JOB_CREATION_Q,
)
"""Queues whose message body is a table id."""


def _retarget(value: Any, table_id: str) -> Any:
    """The message with its table named ``fuzz`` (by name and id), so it reaches past the table lookup."""
    if isinstance(value, dict):
        out = {}
        for key, child in value.items():
            if key == "tableName":
                out[key] = TABLE
            elif key == "tableId":
                out[key] = table_id
            else:
                out[key] = _retarget(child, table_id)
        return out
    if isinstance(value, list):
        return [_retarget(v, table_id) for v in value]
    return value


@pytest.fixture(scope="module")
def fuzz_instance() -> Iterator[tuple[LocalInstance, Callable[[], tuple[int, int, int]]]]:
    directory = Path(tempfile.mkdtemp(prefix="sleeper-fuzz-"))
    instance = LocalInstance.create(directory / "instance")
    table = instance.create_table(TABLE, SCHEMA, split_points=[50])
    for start in (0, 40):
        keys = list(range(start, start + 60))
        table.ingest(pa.table({"key": pa.array(keys, pa.int32()), "value1": pa.array(keys, pa.int64())}))

    def fingerprint() -> tuple[int, int, int]:
        result = instance.table(TABLE).query()
        return checksum(rows_of(result.rename_columns(["key", "value"])))

    yield instance, fingerprint
    shutil.rmtree(directory, ignore_errors=True)


def _table_ids() -> st.SearchStrategy[str]:
    return st.one_of(NASTY_STRINGS, st.text(max_size=40), st.just("no-such-table"))


@pytest.mark.parametrize("queue", [*ENTRY_BASES, *TABLE_ID_QUEUES])
def should_handle_or_refuse_every_mutated_message_leaving_the_rows_unchanged(
    queue: str,
    fuzz_instance: tuple[LocalInstance, Callable[[], tuple[int, int, int]]],
    reliability: Reliability,
) -> None:
    instance, fingerprint = fuzz_instance
    handler = default_handlers()[queue]
    before = fingerprint()
    table_id = instance.table(TABLE).table_id
    if queue in ENTRY_BASES:
        source = ENTRY_BASES[queue]
        loaded = json.loads((APPROVALS / source).read_text()) if isinstance(source, str) else source
        base = _retarget(loaded, table_id)
        bodies: st.SearchStrategy[str] = mutated(base)
    else:
        bodies = _table_ids()
    tally: Counter[str] = Counter()
    unhandled: list[str] = []

    @given(body=bodies)
    @_settings(ENTRY_EXAMPLES)
    def run(body: str) -> None:
        tally["examples"] += 1
        try:
            handler(instance, body)
        except SleeperError as e:
            tally[f"refused:{type(e).__name__}"] += 1
        except OSError as e:  # a store or filesystem out of reach: documented as retried (then dead-lettered)
            tally[f"retried:{type(e).__name__}"] += 1
        except Exception as e:
            unhandled.append(f"{type(e).__name__}: {e} on {body[:200]!r}")
        else:
            tally["handled"] += 1
        assert fingerprint() == before, f"the table's rows changed after {body[:200]!r}"

    run()
    reliability.record(
        "E",
        level="entry",
        queue=queue,
        examples=tally["examples"],
        handled=tally["handled"],
        refused_typed=sum(n for k, n in tally.items() if k.startswith("refused:")),
        refusals={k.removeprefix("refused:"): n for k, n in sorted(tally.items()) if k.startswith("refused:")},
        retried_unreachable=sum(n for k, n in tally.items() if k.startswith("retried:")),
        unhandled_exceptions=len(unhandled),
        rows_lost=0,
        rows_duplicated=0,
    )
    assert unhandled == [], unhandled[:5]
