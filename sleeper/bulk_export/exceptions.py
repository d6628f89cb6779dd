"""Errors of bulk export."""

from __future__ import annotations

from sleeper.core import SleeperError

__all__ = ["BulkExportError", "BulkExportQueryError"]


class BulkExportError(SleeperError):
    """A bulk export could not be planned, read or written."""


class BulkExportQueryError(BulkExportError, ValueError):
    """A bulk export query (or leaf partition export) message is not valid, as Sleeper's
    ``BulkExportQueryValidationException`` (a ``ValueError`` too, as Sleeper's Python client raises for a query naming
    neither or both tables).

    Attributes:
        export_id: The export the message was for, where it could be read.
        reason: What is wrong.
    """

    def __init__(self, reason: str, *, export_id: str | None = None) -> None:
        where = f"bulk export {export_id}: " if export_id else ""
        super().__init__(f"{where}{reason}")
        self.export_id = export_id
        self.reason = reason
