"""The clone explains itself: no tracked file refers to a document outside the repository.

Code, tests and docs may point at files inside the repository (``docs/reliability.md``, ``docs/design.md``...) or at
upstream Sleeper by path (``gchq/sleeper java/core/...``), never at design documents that only existed beside the
port: sections of the specification it was built from ("spec 3.5"), ``ARCHITECTURE.md``, ``RELIABILITY.md`` (or its
rows as "RELIABILITY B3"), ``STYLE.md``, ``PERFORMANCE.md``, ``ECOSYSTEM.md`` or anything under ``../shared``, nor
at the port's own issue tracker, which a clone does not have ("issue 4", "issues 4 and 20"): a text says the target,
figure or behaviour itself. An issue of upstream Sleeper may be named as such ("gchq/sleeper issue 930"). Every
tracked text file is searched, and each reference found is named as ``path:line``.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from collections.abc import Iterable
from pathlib import Path

import pytest

REPOSITORY = Path(__file__).resolve().parents[2]

PROJECT_ISSUE = r"(?<!gchq/sleeper )(?<!Sleeper )\b[Ii]ssues? #?[0-9]"
"""A bare issue number of the port's own tracker; one preceded by ``gchq/sleeper`` or ``Sleeper`` is upstream's."""

OUTSIDE_REFERENCE = re.compile(
    r"spec [0-9]|ARCHITECTURE\.md|RELIABILITY\.md|\bRELIABILITY\b|STYLE\.md|PERFORMANCE\.md|ECOSYSTEM\.md|\.\./shared|"
    + PROJECT_ISSUE
)
"""A reference to a document or tracker that is not in the repository."""

THIS_FILE = "tests/unit/test_self_contained.py"

ALLOWED: frozenset[str] = frozenset()
"""Files that may still hold references for now; each must still hold one, so the list only shrinks."""


def outside_references(root: Path, paths: Iterable[str]) -> list[str]:
    """``path:line: text`` for every line of the given files (relative to ``root``) that refers outside the repository.

    Files that are not UTF-8 text (images, archives) are skipped.
    """
    found = []
    for relative in paths:
        try:
            text = (root / relative).read_text(encoding="utf-8")
        except (UnicodeDecodeError, FileNotFoundError, IsADirectoryError):
            continue
        for number, line in enumerate(text.splitlines(), start=1):
            if OUTSIDE_REFERENCE.search(line):
                found.append(f"{relative}:{number}: {line.strip()}")
    return found


def _tracked_files() -> list[str]:
    git = shutil.which("git")
    if git is None or not (REPOSITORY / ".git").exists():
        pytest.skip("not a git checkout: the tracked files are unknown")
    listing = subprocess.run(  # noqa: S603 (a fixed git command)
        [git, "ls-files", "-z"], cwd=REPOSITORY, capture_output=True, check=True
    ).stdout.decode()
    return [path for path in listing.split("\0") if path]


def should_find_no_reference_to_a_document_outside_the_repository() -> None:
    # Given every tracked file but this one and those still being cleaned
    paths = [p for p in _tracked_files() if p != THIS_FILE and p not in ALLOWED]
    # When they are searched for references outside the repository
    found = outside_references(REPOSITORY, paths)
    # Then there is none
    assert found == [], (
        "references to documents outside the repository (point at docs/ or at upstream Sleeper by path instead):\n"
        + "\n".join(found)
    )


def should_allow_only_files_that_still_hold_a_reference() -> None:
    # Given the files allowed to hold references for now
    tracked = set(_tracked_files())
    # When each is searched
    stale = [p for p in sorted(ALLOWED) if p not in tracked or not outside_references(REPOSITORY, [p])]
    # Then each still holds one (a cleaned file leaves the allow-list, so its references cannot come back)
    assert stale == [], f"no reference left in {stale}: remove them from ALLOWED in {THIS_FILE}"


@pytest.mark.parametrize(
    "line",
    [
        "Bulk import starter (spec 3.5): validates each job",
        "see ARCHITECTURE.md",
        "(RELIABILITY.md 4(c))",
        "a second live run (RELIABILITY B3)",
        "as STYLE.md says",
        "PERFORMANCE.md B.1",
        "ECOSYSTEM.md",
        "[link](../../shared/design/RELIABILITY.md)",
        "Target (issue 5): <= 2 s.",
        "issue 4's wall-time target",
        "(issue 20 item 5)",
        "Issue 16's target is 1.2x.",
        "the targets of issues 4 and 20",
        "a fix for issue #12",
    ],
)
def should_name_the_file_and_line_of_a_reference(tmp_path: Path, line: str) -> None:
    # Given a file whose second line refers outside the repository
    (tmp_path / "module.py").write_text(f'"""A module.\n{line}\n"""\n', encoding="utf-8")
    # When it is searched
    found = outside_references(tmp_path, ["module.py"])
    # Then the reference is named by file and line
    assert found == [f"module.py:2: {line}"]


@pytest.mark.parametrize(
    "line",
    [
        "see docs/reliability.md, row B3",
        "SLEEPER_RELIABILITY_REPORT",
        "gchq/sleeper java/core/src/main/java/sleeper/core/statestore/StateStore.java",
        "an Iceberg table spec",
        "an ingest job delivered twice adds its rows once (gchq/sleeper issue 930)",
        "as Sleeper issue 930 asks",
        "a tissue of 3 layers",
    ],
)
def should_accept_references_inside_the_repository_or_to_upstream_sleeper(tmp_path: Path, line: str) -> None:
    # Given a file pointing inside the repository or at upstream Sleeper
    (tmp_path / "doc.md").write_text(line + "\n", encoding="utf-8")
    (tmp_path / "image.png").write_bytes(b"\x89PNG\r\n\x1a\n\xff\xfe spec 3.5")
    # When it and a binary file are searched
    found = outside_references(tmp_path, ["doc.md", "image.png"])
    # Then nothing is reported
    assert found == []
