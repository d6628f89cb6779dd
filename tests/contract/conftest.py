"""Fixtures of the contract suites: each suite runs unchanged over every adapter family.

The contract
------------
- ``backend_factory`` (params ``"memory"``, ``"sqlite"``, ``"aws"``, and ``"files"``, ``"s3"``: the object logs)
  gives a ``BackendFactory``: ``make()`` returns a
  new, empty ``sleeper.statestore.ports.StateStoreBackend`` on each call, and ``filesystem``/``snapshot_base`` say
  where a ``StateStore`` keeps its snapshot files in that family. ``state_store_backend`` is one such backend.
- ``table_index_factory`` (``"memory"``, ``"sqlite"``, ``"aws"``) gives a function returning a new, empty
  ``sleeper.core.table.TableIndex``; ``table_index`` is one such index.
- ``"memory"``: ``sleeper.adapters.memory`` (snapshots in an in-memory ``pyarrow`` filesystem).
- ``"sqlite"``: ``sleeper.adapters.local`` on a database file under ``tmp_path`` (snapshots on local disk).
- ``"aws"``: imported lazily from ``tests/contract/aws_backends.py``, owned by the AWS adapters, which must provide
  ``make_state_store_backend(tmp_path: Path) -> StateStoreBackend`` and ``make_table_index(tmp_path: Path) ->
  TableIndex``, each returning fresh, isolated resources on every call (snapshots on local disk here). If the module
  or a function is missing, or it cannot be imported, the test is skipped. These parameters carry the ``aws``
  marker, so ``-m "not aws"`` leaves them out.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from pyarrow import fs as pafs

from sleeper.adapters.local.file_log import FileStateStoreBackend
from sleeper.adapters.local.statestore import SqliteStateStoreBackend
from sleeper.adapters.local.table_index import SqliteTableIndex
from sleeper.adapters.memory.filesystem import in_memory_filesystem
from sleeper.adapters.memory.statestore import InMemoryStateStoreBackend
from sleeper.adapters.memory.table_index import InMemoryTableIndex
from sleeper.core.table import TableIndex
from sleeper.statestore.ports import StateStoreBackend

FAMILIES = ["memory", "sqlite", pytest.param("aws", marks=pytest.mark.aws)]
STATE_STORE_FAMILIES = [*FAMILIES, "files", pytest.param("s3", marks=pytest.mark.aws)]
"""The state store also runs over logs kept as objects (``S3TransactionLogStateStore``): ``files`` on the local
filesystem (``sleeper.adapters.local.file_log``), ``s3`` on the moto server (``sleeper.adapters.aws.s3_log``)."""


@dataclass(frozen=True)
class BackendFactory:
    """Makes state store backends of one adapter family.

    Attributes:
        name: The family: ``memory``, ``sqlite`` or ``aws``.
        make: Returns a new, empty backend on each call.
        filesystem: Where state stores of this family keep snapshot files.
        snapshot_base: A directory on ``filesystem`` for a table's snapshots (one per test).
    """

    name: str
    make: Callable[[], StateStoreBackend]
    filesystem: pafs.FileSystem
    snapshot_base: str


def _aws_factory(name: str) -> Callable[[Path], Any]:
    try:
        module = importlib.import_module("tests.contract.aws_backends")
    except Exception as e:  # an optional family: any failure to import means it cannot run here
        pytest.skip(f"AWS contract backends cannot be imported: {e}")
    factory = getattr(module, name, None)
    if not callable(factory):
        pytest.skip(f"tests/contract/aws_backends.py has no {name}()")
    return factory  # type: ignore[no-any-return]


@pytest.fixture(params=STATE_STORE_FAMILIES)
def backend_factory(request: pytest.FixtureRequest, tmp_path: Path) -> BackendFactory:
    """Makes state store backends of each adapter family in turn."""
    family: str = request.param
    if family == "memory":
        return BackendFactory("memory", InMemoryStateStoreBackend, in_memory_filesystem(), "data/table")
    local = pafs.LocalFileSystem()
    snapshots = str(tmp_path / "snapshots")
    if family == "sqlite":
        counter = iter(range(1_000_000))

        def make_sqlite() -> StateStoreBackend:
            n = next(counter)
            return SqliteStateStoreBackend(tmp_path / f"db-{n}" / "sleeper.db", tmp_path / f"db-{n}" / "data")

        return BackendFactory("sqlite", make_sqlite, local, snapshots)
    if family == "files":
        roots = iter(range(1_000_000))
        return BackendFactory(
            "files", lambda: FileStateStoreBackend(tmp_path / f"files-{next(roots)}" / "data"), local, snapshots
        )
    if family == "s3":
        make_s3 = _aws_factory("make_s3_state_store_backend")
        return BackendFactory("s3", lambda: make_s3(tmp_path), local, snapshots)
    make_aws = _aws_factory("make_state_store_backend")
    return BackendFactory("aws", lambda: make_aws(tmp_path), local, snapshots)


@pytest.fixture
def state_store_backend(backend_factory: BackendFactory) -> StateStoreBackend:
    """A new, empty state store backend of each adapter family in turn."""
    return backend_factory.make()


@pytest.fixture(params=FAMILIES)
def table_index_factory(request: pytest.FixtureRequest, tmp_path: Path) -> Callable[[], TableIndex]:
    """Makes table indexes of each adapter family in turn; each call gives a new, empty index."""
    family: str = request.param
    if family == "memory":
        return InMemoryTableIndex
    if family == "sqlite":
        counter = iter(range(1_000_000))
        return lambda: SqliteTableIndex(tmp_path / f"index-{next(counter)}.db")
    make_aws = _aws_factory("make_table_index")
    return lambda: make_aws(tmp_path)


@pytest.fixture
def table_index(table_index_factory: Callable[[], TableIndex]) -> TableIndex:
    """A new, empty table index of each adapter family in turn."""
    return table_index_factory()
