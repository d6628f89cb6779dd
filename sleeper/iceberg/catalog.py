"""The Iceberg catalog a table's view is registered in, which follows from where the instance keeps its data:

* a local instance (``file://`` data): a SQL catalog in SQLite at ``<instance directory>/iceberg/catalog.db``
  (pyiceberg's ``SqlCatalog``, named ``sleeper``); DuckDB, Spark or pyiceberg read it by that file or by the
  metadata location a publish reports;
* an instance on AWS (``s3a://`` data): the account's AWS Glue Data Catalog in the instance's region, which Athena,
  EMR, Spark and DuckDB read. S3 and Glue are reached with the instance's region, endpoint and credentials (an
  emulated instance's endpoint reaches both).

Paths in the view are ``s3://`` (Sleeper records ``s3a://``, a Hadoop scheme Athena does not read) or ``file://``.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import unquote, urlparse

from sleeper.core import missing_extra
from sleeper.io import FileSystemOptions, S3Options

if TYPE_CHECKING:
    from pyiceberg.catalog import Catalog

__all__ = ["CATALOG_NAME", "catalog_properties", "iceberg_path", "load_catalog", "local_catalog_path"]

CATALOG_NAME = "sleeper"
"""The name the catalog is loaded under."""


def iceberg_path(uri: str) -> str:
    """A file's URI as the view names it: ``s3a://`` becomes ``s3://``, anything else is unchanged."""
    return "s3://" + uri[len("s3a://") :] if uri.startswith("s3a://") else uri


def local_catalog_path(data_root: str) -> Path:
    """The SQLite file of a local instance's catalog: ``<instance directory>/iceberg/catalog.db``, beside ``data/``."""
    return Path(unquote(urlparse(data_root).path)).parent / "iceberg" / "catalog.db"


def _endpoint(s3: S3Options) -> str | None:
    endpoint = s3.endpoint_override
    if not endpoint:
        return None
    return endpoint if "://" in endpoint else f"{s3.scheme}://{endpoint}"


def catalog_properties(data_root: str, options: FileSystemOptions | None) -> dict[str, str]:
    """pyiceberg's catalog properties for an instance whose data is under ``data_root``.

    Raises:
        ValueError: If the data root is neither ``file://`` nor ``s3://``/``s3a://``.
    """
    scheme = urlparse(data_root).scheme
    if scheme == "file":
        path = local_catalog_path(data_root)
        return {"type": "sql", "uri": f"sqlite:///{path}", "warehouse": path.parent.as_uri()}
    if scheme not in ("s3", "s3a"):
        raise ValueError(f"cannot choose an Iceberg catalog for data under {data_root}: expected file:// or s3a://")
    s3 = (options or FileSystemOptions()).s3
    properties = {"type": "glue"}
    for service in ("glue", "s3"):
        if s3.region:
            properties[f"{service}.region"] = s3.region
        endpoint = _endpoint(s3)
        if endpoint:
            properties[f"{service}.endpoint"] = endpoint
        if s3.access_key and s3.secret_key:
            properties[f"{service}.access-key-id"] = s3.access_key
            properties[f"{service}.secret-access-key"] = s3.secret_key
            if s3.session_token:
                properties[f"{service}.session-token"] = s3.session_token
    return properties


def load_catalog(data_root: str, options: FileSystemOptions | None) -> Catalog:
    """The catalog of an instance (see the module docs); a local instance's SQLite file is created if missing.

    Raises:
        MissingExtraError: If pyiceberg is not installed (the ``iceberg`` extra).
    """
    try:
        from pyiceberg.catalog import load_catalog as pyiceberg_catalog
    except ImportError as e:
        raise missing_extra(e, "publishing an Iceberg view", "iceberg") or e from None

    properties = catalog_properties(data_root, options)
    if properties["type"] == "sql":
        local_catalog_path(data_root).parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    return pyiceberg_catalog(CATALOG_NAME, **properties)
