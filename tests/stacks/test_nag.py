"""cdk-nag AwsSolutions checks pass on the example instance: every error is fixed or acknowledged with a reason."""

from __future__ import annotations

from typing import Any

import pytest

cdk_nag = pytest.importorskip("cdk_nag")

pytestmark = pytest.mark.slow

ALLOWED_WARNINGS: set[str] = set()
"""None: point-in-time recovery, a property choice where it is off, is acknowledged on each table with its reason
(stacks/tables.py), so ``-c nag=true`` passes a user's synthesis too."""


def should_pass_aws_solutions_checks(synthesized: Any) -> None:
    # When
    report = cdk_nag.AwsSolutionsChecks().validate_scope(synthesized.app)

    # Then
    errors = [(v.rule_name, [r.construct_path for r in v.violating_resources]) for v in report.violations
              if v.severity == "error"]  # fmt: skip
    warnings = {v.rule_name for v in report.violations if v.severity != "error"}
    assert errors == []
    assert warnings <= ALLOWED_WARNINGS


def should_give_a_reason_for_every_acknowledgement() -> None:
    # Given
    from stacks import nag

    # When
    reasons = [value for name, value in vars(nag).items() if name.isupper() and isinstance(value, str)]

    # Then
    assert len(reasons) >= 8
    assert all(len(reason) > 60 for reason in reasons)
