"""Which bulk import algorithm a class name selects: Sleeper's driver classes mapped to this port's algorithms."""

from __future__ import annotations

import pytest

from sleeper.core.jobs.bulk_import_algorithms import (
    DEFAULT_CLASS_NAME,
    BulkImportAlgorithm,
    UnknownBulkImportAlgorithmError,
    bulk_import_algorithm,
)
from sleeper.core.properties import InstanceProperties
from sleeper.core.properties.instance_bulk import BULK_IMPORT_CLASS_NAME


@pytest.mark.parametrize(
    ("name", "algorithm"),
    [
        ("sleeper.bulkimport.runner.dataframelocalsort.BulkImportDataframeLocalSortDriver", "LOCAL_SORT"),
        ("sleeper.bulkimport.runner.rdd.BulkImportJobRDDDriver", "LOCAL_SORT"),
        ("sleeper.bulkimport.runner.dataframe.BulkImportJobDataframeDriver", "DATAFRAME_SORT"),
        ("local-sort", "LOCAL_SORT"),
        ("dataframe-sort", "DATAFRAME_SORT"),
    ],
)
def should_map_sleepers_driver_classes_and_our_names_to_our_algorithms(name: str, algorithm: str) -> None:
    assert bulk_import_algorithm(name) is BulkImportAlgorithm[algorithm]


@pytest.mark.parametrize(
    "name",
    ["com.example.MyDriver", "sleeper.bulkimport.runner.dataframe.bulkimportjobdataframedriver", "LOCAL-SORT", ""],
)
def should_refuse_any_other_name_naming_where_it_came_from_and_what_is_accepted(name: str) -> None:
    with pytest.raises(UnknownBulkImportAlgorithmError) as e:
        bulk_import_algorithm(name, source="sleeper.bulk.import.class.name")
    assert str(e.value).startswith(f"sleeper.bulk.import.class.name {name!r} is not a bulk import algorithm")
    assert "dataframe-sort" in str(e.value)


def should_default_to_sleepers_default_driver_which_runs_local_sort() -> None:
    properties = InstanceProperties()
    assert properties.get(BULK_IMPORT_CLASS_NAME) == DEFAULT_CLASS_NAME
    assert bulk_import_algorithm(DEFAULT_CLASS_NAME) is BulkImportAlgorithm.LOCAL_SORT


def should_refuse_an_instance_property_naming_an_unknown_algorithm() -> None:
    def class_name_problems(value: str) -> list[str]:
        problems = InstanceProperties({BULK_IMPORT_CLASS_NAME.name: value}).problems()
        return [p for p in problems if BULK_IMPORT_CLASS_NAME.name in p]

    assert len(class_name_problems("com.example.MyDriver")) == 1
    assert class_name_problems("dataframe-sort") == []
    assert class_name_problems("sleeper.bulkimport.runner.rdd.BulkImportJobRDDDriver") == []
