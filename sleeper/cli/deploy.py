"""``sleeper deploy CONFIG`` and ``sleeper teardown CONFIG``: the CDK app run on a configuration directory (or an
``instance.properties``), as Sleeper's users run ``cdk deploy -c configurationDir=DIR``.

Before running ``cdk``, each prints what it will create or remove: the nested stacks, from the code the CDK app
builds them with (``sleeper.core.deploy.plan``), and the tables of the configuration. The ``cdk`` command (the AWS
CDK CLI, ``npm install -g aws-cdk``) must be on the path; the app runs with this command's Python.
"""

from __future__ import annotations

import shlex
import shutil
import subprocess
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from sleeper.cli.common import console, parse_assignments, refuse_stdin
from sleeper.core.exceptions import SleeperError
from sleeper.core.words import counted

if TYPE_CHECKING:
    from sleeper.core.deploy.configuration import InstanceConfiguration

__all__ = [
    "DeployCommand",
    "deploy",
    "deploy_command",
    "register",
    "run_deploy",
    "run_teardown",
    "teardown",
    "teardown_command",
]

Runner = Callable[[Sequence[str], Path], int]
"""Runs a command in a directory and returns its exit status."""


def _run(argv: Sequence[str], cwd: Path) -> int:
    return subprocess.run(list(argv), cwd=cwd, check=False).returncode


APP_MODULE = "sleeper.cdk.app"
"""The CDK app, installed with the package: ``cdk`` runs it as ``<this Python> -m sleeper.cdk.app``."""


def repository_root() -> Path:
    """Where ``cdk`` runs (its ``cdk.out/`` and ``cdk.context.json`` go there): the checkout holding the package when
    there is one (``cdk.json`` beside the ``sleeper`` package), otherwise the current directory."""
    root = Path(__file__).resolve().parents[2]
    return root if (root / "cdk.json").is_file() else Path.cwd()


def app_command() -> str:
    """The ``--app`` of the ``cdk`` command: the packaged app run by this command's Python."""
    return f"{shlex.quote(sys.executable)} -m {APP_MODULE}"


def check_cdk_extra() -> None:
    """Refuses to run ``cdk`` when the app cannot run: the ``cdk`` extra (aws-cdk-lib) is not installed.

    Raises:
        SleeperError: If ``aws_cdk`` cannot be imported by this Python.
    """
    import importlib.util

    if importlib.util.find_spec("aws_cdk") is None or importlib.util.find_spec("constructs") is None:
        raise SleeperError(
            f"the CDK app ({APP_MODULE}) needs the cdk extra, which this Python lacks: pip install 'sleeper-lsm[cdk]'"
        )


def find_cdk() -> str:
    """The ``cdk`` executable.

    Raises:
        SleeperError: If it is not installed.
    """
    found = shutil.which("cdk")
    if found is None:
        raise SleeperError("the AWS CDK CLI 'cdk' is not on the PATH: install it with 'npm install -g aws-cdk'")
    return found


@dataclass(frozen=True, slots=True)
class DeployCommand:
    """A ``cdk`` command line for a configuration, and what it deploys."""

    argv: list[str]
    configuration: InstanceConfiguration
    instance_id: str


def _command(
    verb: str,
    config: Path,
    *,
    context: Sequence[str],
    fixed: dict[str, str],
    flags: Sequence[str],
    cdk: str,
    root: Path,
) -> DeployCommand:
    from sleeper.api.table import check_table_name
    from sleeper.core.deploy import context as keys
    from sleeper.core.deploy.configuration import load_configuration_dir
    from sleeper.core.deploy.context import read_context
    from sleeper.core.properties import instance_common as common

    given = parse_assignments(list(context), "context")
    values = {keys.CONFIGURATION_DIR: str(config.resolve()), **fixed, **given}
    options = read_context(values)  # an unknown or repeated name fails here, naming it, before cdk runs
    configuration = load_configuration_dir(config)
    for table in configuration.tables:
        check_table_name(table.name)  # the table definer checks it too, when the deployment is under way
    options.apply_overrides(configuration.properties)  # as the app does: the plan printed is what it builds
    instance_id = configuration.properties.get(common.ID)
    if not instance_id:
        raise SleeperError(f"{config}: sleeper.id must be set")
    argv = [cdk, verb, "--app", app_command()]
    for name, value in values.items():
        argv += ["-c", f"{name}={value}"]
    return DeployCommand(argv=[*argv, *flags, instance_id], configuration=configuration, instance_id=instance_id)


def deploy_command(
    config: Path,
    *,
    context: Sequence[str] = (),
    artefacts: str | None = None,
    image_tag: str | None = None,
    require_approval: str | None = None,
    cdk: str = "cdk",
    root: Path | None = None,
) -> DeployCommand:
    """The ``cdk deploy`` of a configuration.

    Raises:
        SleeperError: If the configuration or a context value is invalid.
    """
    from sleeper.core.deploy import context as keys

    fixed = {k: v for k, v in ((keys.ARTEFACTS, artefacts), (keys.IMAGE_TAG, image_tag)) if v}
    flags = ["--require-approval", require_approval] if require_approval else []
    return _command("deploy", config, context=context, fixed=fixed, flags=flags, cdk=cdk,
                    root=root or repository_root())  # fmt: skip


def teardown_command(
    config: Path, *, context: Sequence[str] = (), force: bool = False, cdk: str = "cdk", root: Path | None = None
) -> DeployCommand:
    """The ``cdk destroy`` of a configuration (its properties are not validated, as Sleeper's tear down does).

    Raises:
        SleeperError: If the configuration cannot be read or a context value is invalid.
    """
    from sleeper.core.deploy import context as keys

    flags = ["--force"] if force else []
    return _command("destroy", config, context=context, fixed={keys.VALIDATE: "false"}, flags=flags, cdk=cdk,
                    root=root or repository_root())  # fmt: skip


def _describe(command: DeployCommand, heading: str) -> None:
    from sleeper.core.deploy.plan import ignored_optional_stacks, planned_stacks

    properties = command.configuration.properties
    console.print(f"{heading} [bold]{command.instance_id}[/] (CloudFormation stack {command.instance_id}):")
    for stack in planned_stacks(properties, command.configuration.tables):
        console.print(f"  {stack.name}: {stack.description}")
    for name in ignored_optional_stacks(properties):
        console.print(f"  ({name} is not deployed by this port)")
    for table in command.configuration.tables:
        splits = f", {counted(len(table.split_points), 'split point')}" if table.split_points else ""
        console.print(f"  table {table.name}{splits}")
    console.print("$ " + shlex.join(command.argv), markup=False, highlight=False)


def _execute(command: DeployCommand, runner: Runner, root: Path) -> None:
    status = runner(command.argv, root)
    if status != 0:
        raise SleeperError(f"cdk {command.argv[1]} failed (exit status {status}); see its output above")


ContextOption = Annotated[
    list[str] | None, typer.Option("--context", "-c", help="More CDK context, name=value (e.g. vpc=vpc-1).")
]
DryRunOption = Annotated[bool, typer.Option("--dry-run", help="Print what would be done; run nothing.")]
ConfigArgument = Annotated[
    Path, typer.Argument(help="The configuration directory (instance.properties, tables/...) or instance.properties.")
]


def deploy(
    config: ConfigArgument,
    context: ContextOption = None,
    artefacts: Annotated[str | None, typer.Option("--artefacts", help="asset (build images) or ecr.")] = None,
    image_tag: Annotated[str | None, typer.Option("--image-tag", help="The image tag in ecr mode.")] = None,
    require_approval: Annotated[
        str | None, typer.Option("--require-approval", help="Passed to cdk: never, any-change or broadening.")
    ] = None,
    dry_run: DryRunOption = False,
) -> None:
    """Deploy (or update) an instance and its tables to AWS with the CDK."""
    refuse_stdin([config], "the configuration", "the CDK app reads the configuration directory by path")
    run_deploy(config, context=context or (), artefacts=artefacts, image_tag=image_tag,
               require_approval=require_approval, dry_run=dry_run)  # fmt: skip


def run_deploy(
    config: Path,
    *,
    context: Sequence[str] = (),
    artefacts: str | None = None,
    image_tag: str | None = None,
    require_approval: str | None = None,
    dry_run: bool = False,
    runner: Runner = _run,
) -> DeployCommand:
    """Prints what a deployment creates, then runs ``cdk deploy`` (unless a dry run); returns the command.

    Raises:
        SleeperError: If the configuration is invalid, ``cdk`` is missing or fails.
    """
    root = repository_root()
    if not dry_run:
        check_cdk_extra()
    cdk = "cdk" if dry_run else find_cdk()
    command = deploy_command(config, context=context, artefacts=artefacts, image_tag=image_tag,
                             require_approval=require_approval, cdk=cdk, root=root)  # fmt: skip
    _describe(command, "Deploying instance")
    if not dry_run:
        _execute(command, runner, root)
    return command


def teardown(
    config: ConfigArgument,
    context: ContextOption = None,
    force: Annotated[bool, typer.Option("--force", help="Passed to cdk: do not ask for confirmation.")] = False,
    dry_run: DryRunOption = False,
) -> None:
    """Destroy an instance deployed with 'sleeper deploy' (data kept if sleeper.retain.infra.after.destroy)."""
    refuse_stdin([config], "the configuration", "the CDK app reads the configuration directory by path")
    run_teardown(config, context=context or (), force=force, dry_run=dry_run)


def run_teardown(
    config: Path, *, context: Sequence[str] = (), force: bool = False, dry_run: bool = False, runner: Runner = _run
) -> DeployCommand:
    """Prints what a tear down removes, then runs ``cdk destroy`` (unless a dry run); returns the command.

    Raises:
        SleeperError: If the configuration cannot be read, ``cdk`` is missing or fails.
    """
    root = repository_root()
    if not dry_run:
        check_cdk_extra()
    cdk = "cdk" if dry_run else find_cdk()
    command = teardown_command(config, context=context, force=force, cdk=cdk, root=root)
    _describe(command, "Destroying instance")
    from sleeper.core.properties import instance_common as common

    if command.configuration.properties.get_bool(common.RETAIN_INFRA_AFTER_DESTROY):
        console.print("  kept: the data and config buckets and DynamoDB tables (sleeper.retain.infra.after.destroy)")
    if not dry_run:
        _execute(command, runner, root)
    return command


def register(app: typer.Typer) -> None:
    """Adds the commands to the ``sleeper`` command."""
    app.command("deploy")(deploy)
    app.command("teardown")(teardown)
