"""The distribution this package is installed as, and its optional extras: every message telling a user to install
something is made here, so it names the real distribution (``sleeper`` on PyPI is another project).
"""

from __future__ import annotations

from sleeper.core.exceptions import SleeperError

__all__ = ["DISTRIBUTION", "EXTRA_OF_MODULE", "MissingExtraError", "install_command", "missing_extra"]

DISTRIBUTION = "sleeper-lsm"
"""The name on PyPI (``pip install sleeper-lsm``); the import name is ``sleeper``."""

EXTRA_OF_MODULE: dict[str, str] = {
    "boto3": "aws",
    "botocore": "aws",
    "cryptography": "aws",
    "websockets": "aws",
    "moto": "aws-local",
    "flask": "aws-local",
    "flask_cors": "aws-local",
    "werkzeug": "aws-local",
    "pyspark": "spark",
    "pandas": "dataframes",
    "polars": "dataframes",
    "duckdb": "dataframes",
    "datafusion": "datafusion",
    "pyiceberg": "iceberg",
    "sqlalchemy": "iceberg",
    "aws_cdk": "cdk",
    "constructs": "cdk",
    "cdk_nag": "cdk",
}
"""The extra that installs each optional top-level module."""


def install_command(extra: str | None = None) -> str:
    """The pip command that installs the distribution, with an extra if given: ``pip install 'sleeper-lsm[aws]'``."""
    return f"pip install '{DISTRIBUTION}[{extra}]'" if extra else f"pip install {DISTRIBUTION}"


class MissingExtraError(SleeperError):
    """An optional dependency is not installed; the message names the extra that installs it."""

    def __init__(self, purpose: str, extra: str, module: str | None = None) -> None:
        self.purpose = purpose
        self.extra = extra
        self.module = module
        missing = f" ({module} is not installed)" if module else ""
        super().__init__(f"{purpose} needs the {extra} extra{missing}: {install_command(extra)}")


def missing_extra(error: ImportError, purpose: str, extra: str | None = None) -> MissingExtraError | None:
    """The :class:`MissingExtraError` for a failed import of an optional module, or None if the module missing is not
    one an extra installs (a bug to report, not a missing extra).

    Args:
        error: The import error.
        purpose: What needed the module, such as ``"an instance on AWS"``.
        extra: The extra to name; by default the one that installs the missing module.
    """
    name = getattr(error, "name", None)
    top = name.split(".")[0] if name else None
    chosen = extra if extra is not None and top in EXTRA_OF_MODULE else EXTRA_OF_MODULE.get(top or "")
    if chosen is None:
        return None
    return MissingExtraError(purpose, chosen, top)
