"""An I1 failure on an AWS instance keeps the table's state for a post-mortem: moto's state dies with the process."""

from __future__ import annotations

import json
import uuid
from collections import Counter
from pathlib import Path

import pyarrow as pa
import pytest

from sleeper.runtime.aws.instance import AwsInstance
from tests.integration.aws_runtime import converged
from tests.integration.aws_runtime.converged import keep_for_post_mortem
from tests.integration.runtime.crash_harness import SCHEMA
from tests.model.invariants import rows_of


def should_keep_the_tables_state_and_the_files_holding_the_rows_returned_too_often(
    instance: AwsInstance, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a table of two leaves holding 10 rows of one direct ingest, of which row (3, 3) was never acknowledged
    table = instance.create_table(f"pm-{uuid.uuid4().hex[:8]}", SCHEMA, split_points=[5])
    keys = pa.array(range(10), pa.int64())
    ingested = table.ingest(pa.table({"key": keys, "value": keys}), direct=True)
    actual = rows_of(table.query())
    expected = actual - Counter({(3, 3): 1})
    monkeypatch.setattr(converged, "REPORT_PATH", tmp_path / "reliability.jsonl")

    # When the state is kept
    path = keep_for_post_mortem(instance, table, actual, expected)

    # Then it names the row, the one file holding it and that file's partitions, and holds the table's state and log
    kept = json.loads(path.read_text())
    assert path.parent == tmp_path
    assert kept["difference"] == (
        "0 rows lost [], 0 rows duplicated [], 1 rows landed without being acknowledged [(3, 3)]"
    )
    leaf = table.state_store.partition_tree().leaf_for_key([3]).id
    (holder,) = kept["holders"]["(3, 3)"]
    assert leaf in holder["partitions"]  # (one file referenced on both leaves, Sleeper's default ingest)
    assert holder["file"] in {f.location for f in ingested.files}
    assert {r["filename"] for r in kept["references"]} == {f.location for f in ingested.files}
    assert len(kept["partitions"]) == 3
    assert [e["type"] for e in kept["logs"]["files"]] == ["ADD_FILES"]
