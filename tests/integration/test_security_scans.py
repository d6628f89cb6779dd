"""G7 scanning (docs/reliability.md): bandit over the package reports no finding of high severity.

bandit runs offline, so it runs here; each finding of medium severity is listed with its reason in docs/security.md.
``pip-audit`` needs the vulnerability service and is run by hand (docs/security.md gives the command and the last
result).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.reliability_report import Reliability

pytestmark = [pytest.mark.integration, pytest.mark.slow]

REPOSITORY = Path(__file__).resolve().parent.parent.parent


def should_find_no_high_severity_issue_with_bandit(reliability: Reliability) -> None:
    pytest.importorskip("bandit", reason="bandit is in the dev extra: pip install -e '.[dev]'")
    # When bandit scans the package and the Lambda handlers
    scan = subprocess.run(
        [sys.executable, "-m", "bandit", "-r", "sleeper", "-q", "-f", "json"],
        cwd=REPOSITORY,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    report = json.loads(scan.stdout)
    totals = report["metrics"]["_totals"]
    high = [r for r in report["results"] if r["issue_severity"] == "HIGH"]
    reliability.record(
        "G7",
        case="bandit over the package",
        high=len(high),
        medium=int(totals["SEVERITY.MEDIUM"]),
        low=int(totals["SEVERITY.LOW"]),
        lines_scanned=int(totals["loc"]),
    )
    # Then nothing is of high severity
    assert high == [], [(r["test_id"], r["filename"], r["line_number"], r["issue_text"]) for r in high]
