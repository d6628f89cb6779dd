"""One Spark session for every bulk import test that needs one (starting Spark takes several seconds)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    pytest.importorskip("pyspark")
    from sleeper.bulk_import import spark_session

    session = spark_session(app_name="sleeper-bulk-import-tests", shuffle_partitions=4)
    yield session
    session.stop()
