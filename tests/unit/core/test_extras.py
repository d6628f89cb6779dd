"""The distribution name and extras every install message names (sleeper.core.extras)."""

from __future__ import annotations

import tomllib
from pathlib import Path

from sleeper.core.extras import DISTRIBUTION, EXTRA_OF_MODULE, install_command, missing_extra

ROOT = Path(__file__).resolve().parents[3]


def should_name_the_distribution_pyproject_builds() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["name"] == DISTRIBUTION
    assert set(EXTRA_OF_MODULE.values()) <= set(project["optional-dependencies"])
    assert install_command("aws") == f"pip install '{DISTRIBUTION}[aws]'"


def should_name_the_extra_of_a_missing_optional_module_only() -> None:
    boto = ModuleNotFoundError("No module named 'boto3'", name="boto3")
    error = missing_extra(boto, "an instance on AWS")
    assert error is not None and str(error) == (
        f"an instance on AWS needs the aws extra (boto3 is not installed): pip install '{DISTRIBUTION}[aws]'"
    )
    chosen = missing_extra(ModuleNotFoundError(name="moto.server"), "aws-local", extra="aws-local")
    assert chosen is not None and chosen.extra == "aws-local" and chosen.module == "moto"
    assert missing_extra(ModuleNotFoundError(name="no_such_module"), "x") is None


def should_leave_no_install_message_naming_another_distribution() -> None:
    offenders = []
    for path in [*ROOT.joinpath("sleeper").rglob("*.py"), *ROOT.joinpath("docs").rglob("*.md"), ROOT / "README.md"]:
        text = path.read_text(encoding="utf-8")
        if "pip install 'sleeper[" in text or "pip install sleeper\n" in text or "pip install 'moto[server]'" in text:
            offenders.append(str(path.relative_to(ROOT)))
    assert offenders == []
