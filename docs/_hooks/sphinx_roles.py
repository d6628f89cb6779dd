"""Renders the Sphinx roles of the package's docstrings in the API reference (``docs/reference/``).

The docstrings are Google style, with Sphinx cross-reference roles (``:class:`Field```, ``:func:`connect```,
``:meth:`~Scan.to_arrow```, ``:data:`AWS_PREFIX```...) that Markdown does not know. This griffe extension, loaded
by mkdocstrings (``extensions`` in ``mkdocs.yml``), rewrites each role, once the package is loaded, into inline code
wrapped in an optional autorefs cross-reference: a link where the target is rendered in the reference, plain code
where it is not (a private helper, a builtin, a module outside the reference), never a warning. The target is
resolved in the scope of the object whose docstring holds it, as Sphinx does: a class's members, then its module's
names and imports; a dotted name whose first part is not in scope is taken as a
full path, and a bare one stays plain code.

The forms Sphinx accepts are read: ``:role:`target```, ``:role:`~pkg.mod.Name``` (shown as ``Name``),
``:role:`!target``` (never linked) and ``:role:`title <target>```; the domain prefix (``:py:class:``) is dropped.
"""

from __future__ import annotations

import html
import re
from typing import Any

import griffe

ROLE = re.compile(r":(?:py:)?(?P<role>[a-z]+):`(?P<body>[^`]+)`")
"""A Sphinx role: ``:class:`...```, ``:py:meth:`...```."""

EXPLICIT_TITLE = re.compile(r"^(?P<title>.+?)\s*<(?P<target>[^<>]+)>$")
"""The ``title <target>`` form of a role's body."""


def _resolve(scope: griffe.Object, target: str) -> str | None:
    """The full path of ``target`` seen from ``scope``'s docstring: ``target`` itself when it is dotted and its first
    name is not in scope (taken as a full path), None when it is a bare name not in scope (a builtin, or a member of
    another object: linking it to a page heading of the same name would mislead)."""
    head, dot, rest = target.lstrip(".").partition(".")
    try:
        path = scope.resolve(head)
    except (griffe.NameResolutionError, griffe.AliasResolutionError, griffe.CyclicAliasError):
        return target if dot else None
    return f"{path}{dot}{rest}"


def render_roles(scope: griffe.Object, text: str) -> str:
    """``text`` with every Sphinx role turned into inline code, linked (optionally) to the target's full path."""

    def replace(match: re.Match[str]) -> str:
        body = match["body"].strip()
        explicit = EXPLICIT_TITLE.match(body)
        if explicit:
            title, target = explicit["title"], explicit["target"]
        else:
            target = body.lstrip("!~")
            title = target.rsplit(".", 1)[-1] if body.startswith("~") else target
        code = f"`{title}`"
        if body.startswith("!") or match["role"] not in ROLES_LINKED:
            return code
        identifier = _resolve(scope, target.lstrip("!~"))
        if identifier is None:
            return code
        return f'<autoref identifier="{html.escape(identifier, quote=True)}" optional>{code}</autoref>'

    return ROLE.sub(replace, text)


ROLES_LINKED = frozenset({"class", "func", "meth", "attr", "data", "mod", "obj", "exc", "const", "type"})
"""Roles that name a Python object; any other role (``:envvar:``, ``:file:``) is shown as plain inline code."""


def _objects(obj: griffe.Object) -> list[griffe.Object]:
    """``obj`` and every object defined under it (aliases, which are documented where they are defined, left out)."""
    found = [obj]
    for member in obj.members.values():
        if not member.is_alias:
            found.extend(_objects(member))  # type: ignore[arg-type]
    return found


class SphinxRoles(griffe.Extension):
    """Rewrites the Sphinx roles of every docstring of a loaded package (see the module's docstring)."""

    def on_package(self, *, pkg: griffe.Module, **kwargs: Any) -> None:
        for obj in _objects(pkg):
            if obj.docstring is not None and ":" in obj.docstring.value:
                obj.docstring.value = render_roles(obj, obj.docstring.value)
