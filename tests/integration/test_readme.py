"""The README's code blocks run verbatim: its bash and Python blocks, in order, in one new directory, with the
virtualenv's ``sleeper`` on the PATH. A block right after a ``<!-- readme-test: skip ... -->`` line is only shown (the
Quick start, which builds the virtualenv; the ``aws:ID`` example, which needs a deployed instance)."""

from __future__ import annotations

import csv
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.integration, pytest.mark.slow]

README = Path(__file__).resolve().parents[2] / "README.md"
SKIP_MARKER = "<!-- readme-test: skip"
_BLOCK = re.compile(r"^```(bash|python)\n(.*?)^```$", re.MULTILINE | re.DOTALL)


def readme_blocks(text: str) -> list[tuple[str, str, bool]]:
    """Each bash or Python block of the README: (language, code, whether it is marked to skip)."""
    blocks = []
    for match in _BLOCK.finditer(text):
        before = text[: match.start()].rstrip("\n").rsplit("\n", 1)[-1]
        blocks.append((match.group(1), match.group(2), before.startswith(SKIP_MARKER)))
    return blocks


def _run(language: str, code: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    command = ["bash", "-euo", "pipefail", "-c", code] if language == "bash" else [sys.executable, "-c", code]
    return subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=600, check=False)


def should_run_every_bash_and_python_block_of_the_readme_verbatim(tmp_path: Path) -> None:
    # Given the README's blocks and a new directory, with the virtualenv's sleeper first on the PATH
    blocks = readme_blocks(README.read_text(encoding="utf-8"))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SLEEPER_", "AWS_"))}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    run = [(language, code) for language, code, skip in blocks if not skip]
    assert {language for language, _ in run} == {"bash", "python"}
    assert len([skip for *_, skip in blocks if skip]) == 2  # the Quick start and the aws:ID example

    # When each block runs in turn
    for index, (language, code) in enumerate(run):
        result = _run(language, code, tmp_path, env)

        # Then it succeeds, printing no traceback
        assert result.returncode == 0, f"README block {index} ({language}) failed:\n{code}\n{result.stderr}"
        assert "Traceback" not in result.stderr

    # And what the blocks made is there: the instance, the CSV the query wrote, both tables
    assert (tmp_path / "my-instance" / "instance.properties").exists()
    with (tmp_path / "a-to-m.csv").open(newline="") as written:
        assert list(csv.reader(written))[1:] == [["alice", "31"], ["bob", "42"]]
    listed = _run("bash", "sleeper --instance ./my-instance table list", tmp_path, env).stdout
    assert "people-py" in listed


def should_find_the_blocks_the_readme_shows() -> None:
    # Given a README-like text with a skipped block and two run blocks
    text = "x\n<!-- readme-test: skip (why) -->\n```bash\nmake\n```\n\n```python\nprint(1)\n```\n```bash\nls\n```\n"
    # When its blocks are read, then each has its language, code and skip mark
    assert readme_blocks(text) == [("bash", "make\n", True), ("python", "print(1)\n", False), ("bash", "ls\n", False)]
