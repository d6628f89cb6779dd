"""Properties of a local instance as Java ``.properties`` files under its directory (the config bucket's layout)."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from sleeper.core import TableNotFoundError
from sleeper.core.properties import javaprops


class LocalPropertiesStore:
    """Keeps ``instance.properties`` and ``tables/table-<id>.properties`` in a directory, as Sleeper's config bucket.

    Args:
        directory: The instance directory.
    """

    def __init__(self, directory: Path) -> None:
        self._directory = directory

    @property
    def instance_file(self) -> Path:
        """The instance properties file."""
        return self._directory / "instance.properties"

    def table_file(self, table_id: str) -> Path:
        """The properties file of a table."""
        return self._directory / "tables" / f"table-{table_id}.properties"

    def load_instance(self) -> dict[str, str]:
        return javaprops.load(self.instance_file.read_text(encoding="utf-8"))

    def save_instance(self, values: dict[str, str]) -> None:
        _write_atomically(self.instance_file, javaprops.dump(values))

    def load_table(self, table_id: str) -> dict[str, str]:
        path = self.table_file(table_id)
        try:
            return javaprops.load(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise TableNotFoundError(f"table {table_id} has no properties") from None

    def save_table(self, table_id: str, values: dict[str, str]) -> None:
        _write_atomically(self.table_file(table_id), javaprops.dump(values))

    def delete_table(self, table_id: str) -> None:
        self.table_file(table_id).unlink(missing_ok=True)


def _write_atomically(path: Path, text: str) -> None:
    """Writes a file so readers see either the old or the new content, never a partial one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
