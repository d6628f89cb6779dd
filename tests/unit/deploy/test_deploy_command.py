"""``sleeper deploy`` / ``sleeper teardown``: the cdk command line built for a configuration, what is printed
before it runs, and a missing cdk reported in one line."""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from pathlib import Path

import pytest

from sleeper.cli import deploy as deploy_cli
from sleeper.cli.main import run
from sleeper.core.exceptions import SleeperError

SCHEMA = {"rowKeyFields": [{"name": "key", "type": "LongType"}], "valueFields": []}


@pytest.fixture
def configuration(tmp_path: Path) -> Path:
    (tmp_path / "instance.properties").write_text(
        "sleeper.id=deployed\nsleeper.optional.stacks=QueryStack,DashboardStack,EmrStudioStack\n", encoding="utf-8"
    )
    table = tmp_path / "tables" / "t"
    table.mkdir(parents=True)
    (table / "table.properties").write_text("sleeper.table.name=numbers\n", encoding="utf-8")
    (table / "schema.json").write_text(json.dumps(SCHEMA), encoding="utf-8")
    (table / "splits.txt").write_text("5\n", encoding="utf-8")
    return tmp_path


class FakeRunner:
    def __init__(self, status: int = 0) -> None:
        self.calls: list[tuple[list[str], Path]] = []
        self.status = status

    def __call__(self, argv: Sequence[str], cwd: Path) -> int:
        self.calls.append((list(argv), cwd))
        return self.status


def should_run_cdk_deploy_on_the_configuration_directory(
    configuration: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given a cdk on the path
    monkeypatch.setattr(deploy_cli.shutil, "which", lambda name: f"/opt/bin/{name}")
    runner = FakeRunner()

    # When
    deploy_cli.run_deploy(configuration, context=["vpc=vpc-1"], artefacts="ecr", require_approval="never",
                          runner=runner)  # fmt: skip

    # Then cdk deploy ran the app with this Python on the directory, from the repository root
    ((argv, cwd),) = runner.calls
    root = deploy_cli.repository_root()
    assert argv == [
        "/opt/bin/cdk", "deploy", "--app", f"{sys.executable} -m sleeper.cdk.app",
        "-c", f"configurationDir={configuration.resolve()}", "-c", "artefacts=ecr", "-c", "vpc=vpc-1",
        "--require-approval", "never", "deployed",
    ]  # fmt: skip
    assert cwd == root
    # And it printed the stacks and tables first, from the plan the app builds
    out = capsys.readouterr().out
    assert "Deploying instance deployed" in out
    for stack in ("StateStore", "Query", "TableDefiner", "Alarms", "Dashboard"):
        assert f"  {stack}: " in out
    assert "Compaction:" not in out
    assert "EmrStudioStack is not deployed by this port" in out
    assert "table numbers, 1 split point" in out and "1 split points" not in out


def should_tear_down_without_validating_the_properties(configuration: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Given
    monkeypatch.setattr(deploy_cli.shutil, "which", lambda name: "cdk")
    runner = FakeRunner()

    # When
    command = deploy_cli.run_teardown(configuration, force=True, runner=runner)

    # Then
    assert runner.calls[0][0] == command.argv
    assert command.argv[1] == "destroy"
    assert "validate=false" in command.argv and command.argv[-2:] == ["--force", "deployed"]


def should_refuse_an_unknown_context_name_before_running_cdk(configuration: Path) -> None:
    # When / Then
    with pytest.raises(SleeperError, match="'vcp'"):
        deploy_cli.deploy_command(configuration, context=["vcp=vpc-1"], root=Path("/repo"))


def should_report_a_failed_cdk(configuration: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Given
    monkeypatch.setattr(deploy_cli.shutil, "which", lambda name: "cdk")

    # When / Then
    with pytest.raises(SleeperError, match="cdk deploy failed \\(exit status 3\\)"):
        deploy_cli.run_deploy(configuration, runner=FakeRunner(status=3))


def should_say_in_one_line_that_cdk_is_missing(
    configuration: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given no cdk on the path
    monkeypatch.setenv("PATH", str(configuration))

    # When
    status = run(["deploy", str(configuration)])

    # Then
    err = capsys.readouterr().err.strip()
    assert status != 0
    assert len(err.splitlines()) == 1
    assert "'cdk' is not on the PATH" in err and "npm install -g aws-cdk" in err


def should_print_the_plan_of_a_dry_run_without_cdk(
    configuration: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given no cdk on the path
    monkeypatch.setenv("PATH", str(configuration))

    # When
    status = run(["deploy", str(configuration), "--dry-run"])

    # Then
    assert status == 0
    assert "$ cdk deploy --app" in capsys.readouterr().out
