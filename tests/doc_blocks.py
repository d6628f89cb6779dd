"""Reading the code blocks of a Markdown document, for the tests that run the README's and the docs' examples.

A bash, sh or Python block is taken with the mark on the line just before it, if any: an HTML comment
``<!-- <marker>: <mark> (<detail>) -->`` where ``marker`` is ``readme-test`` in the README and ``docs-test`` in docs/.
The marks are ``skip`` (the block is only shown; the detail says why), ``aws`` (it runs against an instance on the
in-process moto server; the detail says what the test provisions) and ``file`` (the block is the content of the file
the detail names, written in the run's directory instead of being run). A block indented under a list item is read
with that indentation removed. Blocks of other languages (``sql``, ``console``, unnamed) are not read.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import NamedTuple

SKIP, AWS, FILE = "skip", "aws", "file"
MARKS = (SKIP, AWS, FILE)
_BLOCK = re.compile(r"^( *)```(bash|sh|python)\n(.*?)^\1```$", re.MULTILINE | re.DOTALL)


class Block(NamedTuple):
    """One bash, sh or Python block: its language, its code, its mark (None when unmarked) and the mark's detail."""

    language: str
    code: str
    mark: str | None
    detail: str


def read_blocks(text: str, marker: str) -> list[Block]:
    """Each bash, sh or Python block of ``text`` in order, with the ``marker`` mark just before it.

    A mark other than ``skip``, ``aws`` or ``file`` raises ``ValueError`` naming it, so a typo never silently runs
    a block meant to be skipped.
    """
    mark_line = re.compile(rf"^\s*<!-- {re.escape(marker)}: (\w+)\s*(?:\((.*)\))?\s*-->\s*$")
    blocks = []
    for match in _BLOCK.finditer(text):
        before = text[: match.start()].rstrip("\n").rsplit("\n", 1)[-1]
        mark = mark_line.match(before)
        if mark and mark.group(1) not in MARKS:
            raise ValueError(f"unknown {marker} mark {mark.group(1)!r}: use one of {', '.join(MARKS)}")
        indent, language = match.group(1), match.group(2)
        code = "".join(line.removeprefix(indent) for line in match.group(3).splitlines(keepends=True))
        if mark is None:
            blocks.append(Block(language, code, None, ""))
        else:
            blocks.append(Block(language, code, mark.group(1), (mark.group(2) or "").strip()))
    return blocks


EXTRAS_MODULES = ("pandas", "polars", "duckdb", "boto3", "botocore", "moto", "pyspark", "pyiceberg", "datafusion")
"""The modules only the package's extras install: local blocks run without them, as in the virtualenv ``make demo``
builds (the package and its base dependencies only)."""


def without_extras(tmp_path: Path, env: dict[str, str]) -> dict[str, str]:
    """The environment with the extras' modules unimportable in every Python process it starts (a ``sitecustomize``
    first on the path), as in a virtualenv holding the base dependencies only."""
    blocker = tmp_path / "without-extras"
    blocker.mkdir(exist_ok=True)
    (blocker / "sitecustomize.py").write_text(
        "import sys\n\n\n"
        "class WithoutExtras:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        f"        if name.split('.')[0] in {EXTRAS_MODULES!r}:\n"
        "            raise ModuleNotFoundError(f'No module named {name!r}', name=name)\n"
        "        return None\n\n\n"
        "sys.meta_path.insert(0, WithoutExtras())\n",
        encoding="utf-8",
    )
    path = os.pathsep.join(p for p in (str(blocker), env.get("PYTHONPATH", "")) if p)
    return {**env, "PYTHONPATH": path}


def run_block(language: str, code: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """Runs a bash or sh block with ``bash -euo pipefail``, a Python block with this interpreter, in ``cwd``."""
    command = ["bash", "-euo", "pipefail", "-c", code] if language in ("bash", "sh") else [sys.executable, "-c", code]
    return subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=600, check=False)
