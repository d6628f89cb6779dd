"""Count-and-checksum fingerprints of a table's rows, computed the same way from Arrow (Sleeper's query, pyiceberg's
scan) and in SQL (DuckDB's ``iceberg_scan``): the number of rows, and the sum over rows of the first 15 hex digits of
``md5("<key>|<value>")``, which no reordering changes and any lost, doubled or altered row does.

DuckDB reads Iceberg through its ``iceberg`` extension, which it downloads on first use. Offline, it is found in the
``duckdb-ext-iceberg`` package (PyPI, built for DuckDB 1.4.4); when the DuckDB this process imports cannot load it,
``SLEEPER_DUCKDB_ICEBERG_PYTHON`` may name another interpreter whose DuckDB can, and the scan runs there. Run as a
script, this module prints the fingerprint of an ``iceberg_scan`` as JSON.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pyarrow as pa

DUCKDB_PYTHON_ENV = "SLEEPER_DUCKDB_ICEBERG_PYTHON"

SQL = (
    "SELECT count(*), coalesce(sum(('0x' || substr(md5(CAST(key AS VARCHAR) || '|' || value), 1, 15))::UBIGINT), 0) "
    "FROM iceberg_scan(?)"
)


def fingerprint(rows: pa.Table) -> tuple[int, int]:
    """The fingerprint of rows with ``key`` and ``value`` columns."""
    total = 0
    for key, value in zip(rows.column("key").to_pylist(), rows.column("value").to_pylist(), strict=True):
        total += int(hashlib.md5(f"{key}|{value}".encode()).hexdigest()[:15], 16)
    return rows.num_rows, total


def _connect() -> Any:
    import duckdb

    config: dict[str, Any] = {"autoinstall_known_extensions": False}
    try:
        import duckdb_ext  # type: ignore[import-not-found]

        config["extension_directory"] = os.path.join(next(iter(duckdb_ext.__path__)), "extensions")
    except ImportError:
        pass
    connection = duckdb.connect(config=config)
    connection.execute("LOAD iceberg")
    return connection


def _s3(connection: Any, settings: dict[str, str]) -> None:
    connection.execute("LOAD httpfs")
    connection.execute(
        "CREATE SECRET (TYPE s3, KEY_ID ?, SECRET ?, REGION ?, ENDPOINT ?, URL_STYLE 'path', USE_SSL false)",
        [settings["key"], settings["secret"], settings["region"], settings["endpoint"]],
    )


def duckdb_fingerprint(metadata_location: str, s3: dict[str, str] | None = None) -> tuple[int, int] | str:
    """The fingerprint of DuckDB's ``iceberg_scan`` of a view, or why DuckDB could not be used."""
    try:
        connection = _connect()
    except Exception as e:  # noqa: BLE001 - no usable DuckDB here: try another interpreter
        interpreter = os.environ.get(DUCKDB_PYTHON_ENV)
        if not interpreter:
            return f"DuckDB cannot load its iceberg extension here ({e}); set {DUCKDB_PYTHON_ENV}"
        done = subprocess.run(
            [interpreter, __file__, metadata_location, json.dumps(s3 or {})],
            capture_output=True,
            text=True,
            check=True,
            timeout=300,
        )
        count, checksum = json.loads(done.stdout.strip().splitlines()[-1])
        return int(count), int(checksum)
    if s3:
        _s3(connection, s3)
    count, checksum = connection.execute(SQL, [metadata_location]).fetchone()
    return int(count), int(checksum)


if __name__ == "__main__":
    result = duckdb_fingerprint(sys.argv[1], json.loads(sys.argv[2]) if len(sys.argv) > 2 else None)
    if isinstance(result, str):
        raise SystemExit(result)
    print(json.dumps(list(result)))
