"""cdk-nag AwsSolutions checks pass on the example instance: every error is fixed or acknowledged with a reason."""

from __future__ import annotations

from typing import Any

import pytest

from tests.reliability_report import Reliability

cdk_nag = pytest.importorskip("cdk_nag")

pytestmark = pytest.mark.slow

ALLOWED_WARNINGS: set[str] = set()
"""None: point-in-time recovery, a property choice where it is off, is acknowledged on each table with its reason
(sleeper/cdk/tables.py), so ``-c nag=true`` passes a user's synthesis too."""


def should_pass_aws_solutions_checks(synthesized: Any, reliability: Reliability) -> None:
    # When
    report = cdk_nag.AwsSolutionsChecks().validate_scope(synthesized.app)

    # Then
    errors = [(v.rule_name, [r.construct_path for r in v.violating_resources]) for v in report.violations
              if v.severity == "error"]  # fmt: skip
    warnings = {v.rule_name for v in report.violations if v.severity != "error"}
    reliability.record(
        "G1",
        case="cdk-nag AwsSolutionsChecks on the synthesized example instance",
        unsuppressed_errors=len(errors),
        error_rules=sorted({rule for rule, _ in errors}),
        unsuppressed_warnings=len(warnings - ALLOWED_WARNINGS),
        warning_rules=sorted(warnings),
    )
    assert errors == []
    assert warnings <= ALLOWED_WARNINGS


def should_give_a_reason_for_every_acknowledgement(reliability: Reliability) -> None:
    # Given
    from sleeper.cdk import nag

    # When
    reasons = [value for name, value in vars(nag).items() if name.isupper() and isinstance(value, str)]

    # Then
    reliability.record(
        "G1",
        case="every cdk-nag acknowledgement has a reason",
        acknowledgement_reasons=len(reasons),
        reasons_of_60_chars_or_less=sum(len(reason) <= 60 for reason in reasons),
        shortest_reason_chars=min((len(reason) for reason in reasons), default=0),
    )
    assert len(reasons) >= 8
    assert all(len(reason) > 60 for reason in reasons)
