"""The docs' code blocks run as shown: each document's bash, sh and Python blocks, in order, in one new directory
per document, with the virtualenv's ``sleeper`` on the PATH, as ``tests/integration/test_readme.py`` runs the README's.

Marks (``tests/doc_blocks.py``), on the line just before a block: ``<!-- docs-test: skip (why) -->`` shows a block
only; ``<!-- docs-test: file (path) -->`` writes the block to that path in the directory (a module the next blocks
import); ``<!-- docs-test: aws (what) -->`` runs it with the AWS configuration a user of a deployed instance has,
pointing at this process's moto server, where the test first provisions what the document's ``AWS_SETUPS`` entry
makes. Local blocks run with the extras' modules unimportable, as in the virtualenv ``make demo`` builds, unless the
document is about an extra (``EXTRA_DOCS``).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from contextlib import AbstractContextManager, ExitStack
from pathlib import Path

import pytest

from tests.doc_blocks import AWS, FILE, SKIP, read_blocks, run_block, without_extras

pytestmark = [pytest.mark.integration, pytest.mark.slow]

DOCS = Path(__file__).resolve().parents[2] / "docs"
MARKER = "docs-test"
NOT_YET_MARKED = {
    # Being rewritten by another change at the same time; its blocks are marked once that lands.
    "usage/python.md",
    "usage/aws-local.md",
    # Its deployment section is being edited by another change; its commands need a deployed account and `cdk`.
    "deployment.md",
    # Shown commands of the development workflow: the nightly battery (tens of minutes), pip-audit (needs the
    # vulnerability service) and a sketch of a battery test; to be marked skip with those reasons.
    "development.md",
    "security.md",
    "reliability.md",
}
EXTRA_DOCS = {"usage/iceberg.md"}
"""Documents about an extra: their local blocks run with the extras installed, as a reader of them has."""
EXPECTED_OUTPUT: dict[str, tuple[str, ...]] = {
    # the security filter keeps the rows labelled A and the unlabelled one, from the CLI and from Python
    "usage/iterators.md": ("e1", "e3"),
    # the history lists the ingests, and the state as of files transaction 2 ends at key 99
    "usage/time-travel.md": ("ADD_FILES", '{"key": 99, "value": "v99"}'),
    # the Lambda module answers Athena's ping as Sleeper's connector does
    "usage/athena.md": ("'sourceType': 'Sleeper'", "'capabilities': 24"),
}
"""What a document's blocks print, between them: a block that ran but did the wrong thing fails here."""
UNEXPECTED_OUTPUT: dict[str, tuple[str, ...]] = {
    "usage/iterators.md": ("e2",),
    "usage/time-travel.md": ('{"key": 100,',),
}


def _documents_with_blocks() -> list[str]:
    return sorted(
        str(path.relative_to(DOCS))
        for path in DOCS.rglob("*.md")
        if read_blocks(path.read_text(encoding="utf-8"), MARKER)
    )


AwsSetup = Callable[[Path, dict[str, str]], AbstractContextManager[dict[str, str]]]
AWS_SETUPS: dict[str, AwsSetup] = {}
"""For each document with ``aws`` blocks: what the test provisions on moto first, giving the blocks' environment."""


@pytest.mark.parametrize(
    "document",
    [
        pytest.param(document, marks=[pytest.mark.aws] if document in AWS_SETUPS else [])
        for document in _documents_with_blocks()
        if document not in NOT_YET_MARKED
    ],
)
def should_run_every_bash_sh_and_python_block_of_the_docs(document: str, tmp_path: Path) -> None:
    # Given the document's blocks and a new directory, with the virtualenv's sleeper first on the PATH
    blocks = read_blocks((DOCS / document).read_text(encoding="utf-8"), MARKER)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SLEEPER_", "AWS_"))}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    local_env = env if document in EXTRA_DOCS else without_extras(tmp_path, env)
    assert all(block.detail for block in blocks if block.mark), f"{document}: a mark without its reason"
    assert (document in AWS_SETUPS) == any(block.mark == AWS for block in blocks), document

    # When each block runs in turn (a file block written, a skipped block passed over)
    output = ""
    with ExitStack() as on_aws:
        aws_env: dict[str, str] | None = None
        for index, block in enumerate(blocks):
            if block.mark == SKIP:
                continue
            if block.mark == FILE:
                path = tmp_path / block.detail
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(block.code, encoding="utf-8")
                continue
            if block.mark == AWS:
                aws_env = aws_env or on_aws.enter_context(AWS_SETUPS[document](tmp_path, env))
            result = run_block(block.language, block.code, tmp_path, aws_env if block.mark == AWS else local_env)

            # Then it succeeds, printing no traceback
            failed = f"{document} block {index} ({block.language}) failed:\n{block.code}\n{result.stderr}"
            assert result.returncode == 0, failed
            assert "Traceback" not in result.stderr, result.stderr
            output += result.stdout

    # And it printed what the document says it does
    assert all(text in output for text in EXPECTED_OUTPUT.get(document, ())), output
    assert not any(text in output for text in UNEXPECTED_OUTPUT.get(document, ())), output


def should_read_the_docs_marks() -> None:
    # Given a document with a file block, a skipped block, an indented block in a list and an aws block
    text = "<!-- docs-test: file (pkg/m.py) -->\n```python\nX = 1\n```\n"
    text += "<!-- docs-test: skip (a server) -->\n```sh\nup\n```\n"
    text += "1. step:\n\n   ```bash\n   ls\n   ```\n<!-- docs-test: aws (on moto) -->\n```python\nprint(1)\n```\n"
    # When its blocks are read, then each has its language, code, mark and the mark's reason
    assert [tuple(block) for block in read_blocks(text, MARKER)] == [
        ("python", "X = 1\n", FILE, "pkg/m.py"),
        ("sh", "up\n", SKIP, "a server"),
        ("bash", "ls\n", None, ""),
        ("python", "print(1)\n", AWS, "on moto"),
    ]


def should_refuse_an_unknown_mark() -> None:
    # Given a block marked with a typo, when it is read, then the mark is named rather than the block run
    with pytest.raises(ValueError, match="unknown docs-test mark 'skp'"):
        read_blocks("<!-- docs-test: skp (x) -->\n```bash\nrm -rf /\n```\n", MARKER)
