"""The documentation site builds strictly, as ``make docs`` builds it: the pages of docs/ and the API reference
generated from the docstrings (docs/reference/), with any mkdocs, mkdocstrings or autorefs warning an error.

The build runs once, into a temporary directory. Its pages are then read: the docstrings' Sphinx roles rendered (by
docs/_hooks/sphinx_roles.py), never shown raw, and every reference page in the nav and linked from docs/index.md.
"""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
import textwrap
from pathlib import Path
from types import ModuleType

import pytest

pytestmark = pytest.mark.integration

REPOSITORY = Path(__file__).resolve().parents[2]
DOCS = REPOSITORY / "docs"
REFERENCE = DOCS / "reference"
RAW_ROLE = re.compile(r":(?:py:)?(?:class|func|meth|attr|data|mod|exc|obj|const):(?:`|<code>)")
"""A Sphinx role left raw in a page: as written, or as Markdown renders it (`:class:<code>X</code>`)."""


def _require_mkdocs() -> None:
    for module in ("mkdocs", "mkdocstrings", "mkdocstrings_handlers.python", "griffe"):
        if importlib.util.find_spec(module) is None:
            pytest.skip(
                f"{module} is not installed: install the dev extra (pip install -c constraints.txt -e '.[dev]')"
            )


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The site built strictly from mkdocs.yml into a temporary directory."""
    _require_mkdocs()
    out = tmp_path_factory.mktemp("site")
    build = subprocess.run(  # noqa: S603 (this interpreter's mkdocs, fixed arguments)
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file", "mkdocs.yml", "--site-dir", str(out)],
        cwd=REPOSITORY,
        capture_output=True,
        text=True,
        check=False,
    )
    assert build.returncode == 0, f"mkdocs build --strict failed:\n{build.stdout}\n{build.stderr}"
    return out


def _reference_pages() -> list[str]:
    return sorted(str(p.relative_to(DOCS)) for p in REFERENCE.rglob("*.md"))


def _module_pages() -> list[str]:
    return [page for page in _reference_pages() if page != "reference/index.md"]


def should_build_a_page_for_every_document_and_every_reference_module(site: Path) -> None:
    # Given the site built strictly (the fixture fails on any warning)
    # Then every Markdown page of docs/ has its HTML page
    pages = [str(md.relative_to(DOCS)) for md in DOCS.rglob("*.md") if "_hooks" not in md.parts]
    assert [page for page in pages if not _built(site, page).exists()] == []
    # And each reference page documents its module: at least one object rendered from the docstrings
    empty = [page for page in _module_pages() if 'class="doc doc-' not in _html(site, page)]
    assert empty == []


def should_render_every_sphinx_role_of_the_docstrings(site: Path) -> None:
    # Given the reference pages, whose docstrings hold Sphinx roles (:class:`...`)
    raw = {page: sorted(set(RAW_ROLE.findall(_html(site, page)))) for page in _module_pages()}
    # Then none is shown raw
    assert {page: roles for page, roles in raw.items() if roles} == {}
    # And a role naming a documented object links to it: the instance page's `Table` goes to the table page
    assert 'href="table.html#sleeper.api.table.Table"' in _html(site, "reference/api/instance.md")


def should_list_every_page_in_the_nav_and_link_it_from_the_index() -> None:
    # Given the pages of docs/ (the generated properties pages aside: their README is listed and links them), the nav
    # and the home page
    pages = [
        str(md.relative_to(DOCS))
        for md in DOCS.rglob("*.md")
        if md != DOCS / "index.md" and "_hooks" not in md.parts and md.parent.parent.name != "properties"
    ]
    config = (REPOSITORY / "mkdocs.yml").read_text(encoding="utf-8")
    index = (DOCS / "index.md").read_text(encoding="utf-8")
    # Then each page is in the nav, and the home page links it
    assert set(_reference_pages()) <= set(pages)
    assert [page for page in pages if f": {page}\n" not in config] == []
    assert [page for page in pages if f"]({page})" not in index] == []


def _built(site: Path, page: str) -> Path:
    """The HTML file mkdocs makes of a page of docs/ (a README is its directory's index)."""
    path = Path(page)
    return site / (path.with_name("index.html") if path.name == "README.md" else path.with_suffix(".html"))


def _html(site: Path, page: str) -> str:
    return _built(site, page).read_text(encoding="utf-8")


def _hook() -> ModuleType:
    spec = importlib.util.spec_from_file_location("sphinx_roles", DOCS / "_hooks" / "sphinx_roles.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize(
    ("docstring", "rendered"),
    [
        # a class of the module, and a method of the class, resolved in the docstring's scope
        (":class:`Thing`", '<autoref identifier="pkg.mod.Thing" optional>`Thing`</autoref>'),
        (":meth:`size`", '<autoref identifier="pkg.mod.Thing.size" optional>`size`</autoref>'),
        # a name the module imports resolves to where it is defined; ~ shows the last part
        (":class:`~other.Base.name`", '<autoref identifier="pkg.other.Base.name" optional>`name`</autoref>'),
        (
            ":py:func:`the helper <pkg.other.helper>`",
            '<autoref identifier="pkg.other.helper" optional>`the helper`</autoref>',
        ),
        # a dotted name not in scope is taken as a full path; a bare one (a builtin) and ! stay plain code
        (":mod:`pkg.other`", '<autoref identifier="pkg.other" optional>`pkg.other`</autoref>'),
        (":class:`ValueError`", "`ValueError`"),
        (":class:`!Thing`", "`Thing`"),
        (":envvar:`HOME`", "`HOME`"),
    ],
)
def should_render_a_sphinx_role_as_code_linked_to_its_target(tmp_path: Path, docstring: str, rendered: str) -> None:
    _require_mkdocs()
    import griffe

    # Given a package whose method's docstring holds a role
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "other.py").write_text("class Base:\n    name = 1\n\ndef helper():\n    pass\n")
    (package / "mod.py").write_text(
        textwrap.dedent(f'''
        from pkg import other
        from pkg.other import Base

        class Thing(Base):
            def size(self):
                """Uses {docstring}."""
        ''')
    )
    loaded = griffe.load("pkg", search_paths=[tmp_path])
    method = loaded["mod.Thing.size"]
    # When the roles are rendered in its scope
    text = _hook().render_roles(method, method.docstring.value)
    # Then the role is inline code, linked where its target resolves
    assert text == f"Uses {rendered}."
