"""How the user API's objects show themselves: a short ``repr`` (one line, no I/O) and, in a notebook, an HTML
summary (``_repr_html_``) of an instance, a table or a scan."""

from __future__ import annotations

import html
from collections.abc import Sequence

__all__ = ["html_summary"]


def html_summary(title: str, rows: Sequence[tuple[str, object]]) -> str:
    """A small HTML table: a bold title, then one row per (label, value), every text escaped."""
    cells = "".join(
        f"<tr><th style='text-align:left'>{html.escape(label)}</th><td style='text-align:left'>"
        f"{html.escape(str(value))}</td></tr>"
        for label, value in rows
    )
    return f"<div><b>{html.escape(title)}</b><table>{cells}</table></div>"
