"""Infrastructure-as-code checks over every template of the example instance: cfn-lint finds no error, and each
check checkov fails is one listed with its reason in docs/security.md."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.stacks.conftest import cfn_lint

pytestmark = pytest.mark.slow

DOCS = Path(__file__).resolve().parents[2] / "docs" / "security.md"

ALLOWED_CFN_LINT_WARNINGS = {"W3005"}
"""W3005: a DependsOn that a reference already implies. CDK writes both (nested stacks wait for the properties writer
by both), which CloudFormation accepts."""


def should_find_no_cfn_lint_error_in_any_template(synthesized: Any) -> None:
    # Given every template of the synthesized example
    templates = sorted(Path(synthesized.outdir).glob("*.template.json"))
    assert len(templates) >= 20

    # When each is linted
    matches = []
    for path in templates:
        template = json.loads(path.read_text(encoding="utf-8"))
        for rule, message in cfn_lint(json.dumps(template), "eu-west-2"):
            matches.append((path.name, rule, message))

    # Then there are no errors, and only the warnings explained above
    assert [m for m in matches if m[1].startswith("E")] == []
    assert {m[1] for m in matches} <= ALLOWED_CFN_LINT_WARNINGS


def documented_checkov_checks() -> set[str]:
    """The checkov check ids listed in docs/security.md with a reason."""
    text = DOCS.read_text(encoding="utf-8")
    return set(re.findall(r"^\| `(CKV_AWS_\d+)` \|", text, flags=re.MULTILINE))


def should_list_every_failed_checkov_check_with_a_reason(synthesized: Any) -> None:
    # Given checkov (installed on its own: it pins versions of packages this project uses)
    checkov = os.environ.get("SLEEPER_CHECKOV") or shutil.which("checkov")
    if not checkov:
        pytest.skip("checkov is not installed (set SLEEPER_CHECKOV to its executable)")

    # When it checks every template
    result = subprocess.run(
        [checkov, "-d", str(synthesized.outdir), "--framework", "cloudformation", "--quiet", "--compact", "-o", "json"],
        capture_output=True,
        text=True,
        timeout=900,
        env={**os.environ, "BC_SKIP_MAPPING": "TRUE"},
    )
    reports = json.loads(result.stdout)
    failed = {c["check_id"] for r in (reports if isinstance(reports, list) else [reports])
              for c in r["results"]["failed_checks"]}  # fmt: skip

    # Then each failed check is explained in the deployment guide
    assert failed - documented_checkov_checks() == set()
