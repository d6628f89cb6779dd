"""A table's transaction logs and snapshot records as files on a local filesystem (beyond Sleeper).

The layout is :mod:`sleeper.statestore.object_log`'s, under a root directory (a local instance's ``data/``): the
same keys as on S3, so a table's directory looks as its prefix in the data bucket would. An append writes the entry
to a temporary file and hard-links it to the next number's name: ``link`` creates the name only if it does not exist
(atomically, on one filesystem), so two writers, in any processes, can never both take a number, and a reader never
sees a half-written entry (an exclusive ``open(..., "x")`` would show the name before its content is written).

A deleted table has a tombstone file outside its directory; as on S3, an append is checked after it lands and
deleted again if the table has a tombstone (``TableDeletedError``). The logic is :mod:`sleeper.adapters.object_log`'s;
this module gives it the directory.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path

from sleeper.adapters.local.statestore import LocalTransactionBodyStore
from sleeper.adapters.object_log import ObjectStateStoreBackend
from sleeper.statestore import ObjectLogFormatError, StateStoreStorageError, number_of

__all__ = ["FileStateStoreBackend"]


class _Directory:
    """The object store of the logs (``sleeper.adapters.object_log.Objects``) as files under a root directory, a
    key being a path relative to it; failures raise ``StateStoreStorageError``."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def put_if_absent(self, key: str, data: bytes) -> bool:
        """Creates a file with this content only if no file has its name; False if one has."""
        path = self.root / key
        path.parent.mkdir(parents=True, exist_ok=True)
        temporary = path.with_name(f".{path.name}.{uuid.uuid4().hex}.tmp")
        try:
            with open(temporary, "xb") as out:
                out.write(data)
                out.flush()
                os.fsync(out.fileno())
            try:
                os.link(temporary, path)
            except FileExistsError:
                return False
            return True
        except OSError as e:
            raise StateStoreStorageError(f"writing {path}: {e}") from e
        finally:
            temporary.unlink(missing_ok=True)

    def put(self, key: str, data: bytes) -> None:
        path = self.root / key
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
        except OSError as e:
            raise StateStoreStorageError(f"writing {path}: {e}") from e

    def get(self, key: str) -> bytes | None:
        path = self.root / key
        try:
            return path.read_bytes()
        except FileNotFoundError:
            return None
        except OSError as e:
            raise StateStoreStorageError(f"reading {path}: {e}") from e

    def exists(self, key: str) -> bool:
        return (self.root / key).exists()

    def numbered_keys(self, prefix: str, *, after: int = -1) -> Iterator[str]:
        """The numbered files of a directory above ``after``, in number order (temporary files are left out)."""
        directory = self.root / prefix
        try:
            names = os.listdir(directory)
        except FileNotFoundError:
            return iter(())
        except OSError as e:
            raise StateStoreStorageError(f"listing {directory}: {e}") from e
        numbered: list[tuple[int, str]] = []
        for name in names:
            try:
                number = number_of(name)
            except ObjectLogFormatError:
                continue
            if not name.startswith(".") and number > after:
                numbered.append((number, prefix + name))
        return iter([key for _, key in sorted(numbered)])

    def delete(self, keys: list[str]) -> None:
        for key in keys:
            (self.root / key).unlink(missing_ok=True)

    def where(self, key: str) -> str:
        return str(self.root / key)


class FileStateStoreBackend(ObjectStateStoreBackend):
    """The state store of local tables whose logs are files. Implements
    ``sleeper.statestore.ports.StateStoreBackend``.

    Args:
        root: The directory the tables' directories are under (a local instance's ``data/``); large bodies are kept
            there too, as for the SQLite logs.
    """

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)
        super().__init__(_Directory(self.root))

    def body_store(self, table_id: str) -> LocalTransactionBodyStore:
        """The large-body store (keys start with the table id)."""
        return LocalTransactionBodyStore(self.root)
