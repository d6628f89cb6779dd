"""The committed properties reference under docs/usage/properties matches the definitions."""

from __future__ import annotations

from pathlib import Path

from sleeper.core.properties import INSTANCE_PROPERTY_INDEX, TABLE_PROPERTY_INDEX
from sleeper.core.properties.docs import render_docs

DOCS = Path(__file__).resolve().parents[3] / "docs" / "usage" / "properties"
REGENERATE = "run: python -m sleeper.core.properties.docs docs/usage/properties"


def should_match_the_committed_docs() -> None:
    # Given the docs rendered from the definitions
    pages = render_docs()
    # When compared with the committed pages
    committed = {path.relative_to(DOCS).as_posix(): path.read_text(encoding="utf-8") for path in DOCS.rglob("*.md")}
    # Then they are the same pages with the same text
    assert sorted(committed) == sorted(pages), REGENERATE
    stale = [path for path, text in pages.items() if committed[path] != text]
    assert stale == [], REGENERATE


def should_document_every_property_once() -> None:
    # Given the rendered group pages
    pages = render_docs()
    # When property names are collected from their table rows
    documented = [
        line.split("`")[1]
        for path, text in pages.items()
        if path != "README.md"
        for line in text.splitlines()
        if line.startswith("| `sleeper.")
    ]
    # Then every property appears exactly once
    expected = [d.name for d in INSTANCE_PROPERTY_INDEX] + [d.name for d in TABLE_PROPERTY_INDEX]
    assert sorted(documented) == sorted(expected)


def should_show_the_instance_property_a_table_property_falls_back_to() -> None:
    # Given the rendered data storage page for tables
    page = render_docs()["table/data_storage.md"]
    # When the GC delay row is found
    row = next(line for line in page.splitlines() if line.startswith("| `sleeper.table.gc.delay.minutes`"))
    # Then it shows the values it accepts, the default and the instance property it falls back to
    assert row.endswith("| a positive integer | `20` | `sleeper.default.table.gc.delay.minutes` |")
