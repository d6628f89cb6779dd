"""Table metrics from a state store (Sleeper's ``TableMetrics``), and their CloudWatch embedded metric format record."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from sleeper.adapters.aws.emf import emf_record
from sleeper.adapters.memory.statestore import InMemoryStateStoreBackend
from sleeper.core.partition import partitions_from_split_points
from sleeper.core.statestore.references import FileReference
from sleeper.core.statestore.transactions.files import (
    AssignJobIdRequest,
    AssignJobIdsTransaction,
    ReplaceFileReferencesRequest,
    ReplaceFileReferencesTransaction,
)
from sleeper.statestore.metrics import table_metrics
from sleeper.statestore.store import StateStore
from tests.unit.core.statestore.builders import LONG_KEY_SCHEMA


def should_count_references_rows_partitions_and_unreferenced_files() -> None:
    # Given a table of two leaves: two files on the left, one on the right, and one file compacted into another
    store = StateStore(schema=LONG_KEY_SCHEMA, table_id="t1", backend=InMemoryStateStoreBackend())
    store.initialise(partitions_from_split_points(LONG_KEY_SCHEMA, [10]))
    left, right = (p.id for p in store.leaf_partitions())
    store.add_files(
        [
            FileReference(filename="a", partition_id=left, number_of_rows=5),
            FileReference(filename="b", partition_id=left, number_of_rows=7),
            FileReference(filename="c", partition_id=right, number_of_rows=11),
        ]
    )
    store.commit(
        AssignJobIdsTransaction(requests=(AssignJobIdRequest(job_id="j", partition_id=right, filenames=("c",)),))
    )
    output = FileReference(filename="d", partition_id=right, number_of_rows=11)
    store.commit(
        ReplaceFileReferencesTransaction(
            jobs=(ReplaceFileReferencesRequest(job_id="j", input_files=("c",), new_reference=output),)
        )
    )
    # When its metrics are computed
    metrics = table_metrics("inst", "table", store).values()
    # Then they count references, rows, partitions, and the file awaiting garbage collection
    assert metrics["ActiveFileCount"] == 3
    assert metrics["RecordCount"] == 23
    assert (metrics["PartitionCount"], metrics["LeafPartitionCount"]) == (3, 2)
    assert metrics["AverageActiveFilesPerPartition"] == 1.5
    assert (metrics["MinActiveFilesPerPartition"], metrics["MaxActiveFilesPerPartition"]) == (1, 2)
    assert (metrics["FileCount"], metrics["UnreferencedFileCount"]) == (4, 1)


def should_build_an_embedded_metric_format_record() -> None:
    # Given metrics of a table at a moment (recent: CloudWatch drops metrics over 14 days old, and Powertools warns)
    when = datetime.now(tz=UTC).replace(microsecond=0)
    # When they are made an EMF record
    record = emf_record(
        namespace="Sleeper",
        dimensions={"instanceId": "inst", "tableName": "table"},
        metrics={"ActiveFileCount": 3, "RecordCount": 23},
        timestamp=when,
    )
    # Then the directive names the namespace, the dimension set and each metric, and the values are top-level (as
    # Powertools writes them, lists of the values recorded)
    assert record == {
        "_aws": {
            "Timestamp": int(when.timestamp() * 1000),
            "CloudWatchMetrics": [
                {
                    "Namespace": "Sleeper",
                    "Dimensions": [["instanceId", "tableName"]],
                    "Metrics": [{"Name": "ActiveFileCount", "Unit": "Count"}, {"Name": "RecordCount", "Unit": "Count"}],
                }
            ],
        },
        "instanceId": "inst",
        "tableName": "table",
        "ActiveFileCount": [3.0],
        "RecordCount": [23.0],
    }


def should_add_no_service_dimension_where_the_function_names_its_service(monkeypatch: pytest.MonkeyPatch) -> None:
    # Given a function whose environment names its service, as the deployment sets on every function
    monkeypatch.setenv("POWERTOOLS_SERVICE_NAME", "table_metrics")
    # When its metrics are made an EMF record
    record = emf_record(
        namespace="Sleeper",
        dimensions={"instanceId": "inst", "tableName": "table"},
        metrics={"ActiveFileCount": 3},
        timestamp=datetime.now(tz=UTC),
    )
    # Then the dimension set is Sleeper's alone (a service dimension would hide the metrics from the dashboard)
    assert record["_aws"]["CloudWatchMetrics"][0]["Dimensions"] == [["instanceId", "tableName"]]
    assert "service" not in record
