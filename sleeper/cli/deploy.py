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
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from sleeper.cli.common import console, parse_assignments, refuse_stdin
from sleeper.core import SleeperError, counted

if TYPE_CHECKING:
    from sleeper.core.deploy import InstanceConfiguration

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
    from sleeper.api import check_table_name
    from sleeper.core.deploy import context as keys
    from sleeper.core.deploy import load_configuration_dir, read_context
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
    from sleeper.core.deploy import ignored_optional_stacks, planned_stacks

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
OptionalConfigArgument = Annotated[
    Path | None,
    typer.Argument(help="The configuration directory (instance.properties, tables/...) or instance.properties."),
]


def deploy(
    config: OptionalConfigArgument = None,
    instance_id: Annotated[
        str | None,
        typer.Option(
            "--instance-id", help="Redeploy the instance with this id from the properties in its config bucket."
        ),
    ] = None,
    save_to: Annotated[
        Path | None,
        typer.Option("--save-to", help="With --instance-id: where to save its properties (default: a new temp dir)."),
    ] = None,
    context: ContextOption = None,
    artefacts: Annotated[str | None, typer.Option("--artefacts", help="asset (build images) or ecr.")] = None,
    image_tag: Annotated[str | None, typer.Option("--image-tag", help="The image tag in ecr mode.")] = None,
    require_approval: Annotated[
        str | None, typer.Option("--require-approval", help="Passed to cdk: never, any-change or broadening.")
    ] = None,
    dry_run: DryRunOption = False,
) -> None:
    """Deploy (or update) an instance and its tables to AWS with the CDK, from a configuration or, with
    --instance-id, from the instance properties saved in its config bucket."""
    if (config is None) == (instance_id is None):
        raise SleeperError("give a configuration directory, or --instance-id ID to redeploy a deployed instance")
    if instance_id is not None:
        config = save_deployed_configuration(instance_id, save_to)
    elif save_to is not None:
        raise SleeperError("--save-to is for --instance-id: a configuration directory is deployed where it is")
    assert config is not None
    refuse_stdin([config], "the configuration", "the CDK app reads the configuration directory by path")
    run_deploy(config, context=context or (), artefacts=artefacts, image_tag=image_tag,
               require_approval=require_approval, dry_run=dry_run)  # fmt: skip


def save_deployed_configuration(instance_id: str, directory: Path | None = None) -> Path:
    """Saves the ``instance.properties`` of a deployed instance from its config bucket into a directory (a new
    temporary one by default, kept), as Sleeper's deploy of an existing instance does before it runs the CDK; returns
    the directory. The instance's tables are in its config bucket already: a redeploy keeps them.

    Raises:
        InstanceNotFoundError: If its config bucket holds no ``instance.properties``.
        SleeperError: If AWS cannot be reached or is not configured.
    """
    from sleeper.runtime.aws import load_deployed_instance

    deployed = load_deployed_instance(instance_id)
    target = directory if directory is not None else Path(tempfile.mkdtemp(prefix=f"{instance_id}-properties-"))
    path = deployed.save_properties(target)
    console.print(f"Saved the properties of instance {instance_id} from s3://{deployed.config.config_bucket} to {path}",
                  markup=False, highlight=False)  # fmt: skip
    return target


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
    target: Annotated[
        str,
        typer.Argument(
            help="An instance id (tear down everything from its config bucket), or a configuration directory "
            "(cdk destroy)."
        ),
    ],
    context: ContextOption = None,
    force: Annotated[bool, typer.Option("--force", help="Do not ask for confirmation.")] = False,
    keep_artefacts: Annotated[
        bool, typer.Option("--keep-artefacts", help="By id: keep the artefacts bucket and ECR repositories.")
    ] = False,
    dry_run: DryRunOption = False,
) -> None:
    """Tear an instance down: by id (its processes stopped, its stack deleted, its own artefacts removed), or the
    stack of a configuration directory with cdk destroy. Data is kept if sleeper.retain.infra.after.destroy."""
    refuse_stdin([target], "the configuration", "the CDK app reads the configuration directory by path")
    path = Path(target)
    if path.exists():
        run_teardown(path, context=context or (), force=force, dry_run=dry_run)
        return
    if context:
        raise SleeperError(f"--context is for a configuration directory; there is no {target!r} here: by id, none")
    run_teardown_by_id(target, force=force, keep_artefacts=keep_artefacts, dry_run=dry_run)


def run_teardown_by_id(
    instance_id: str,
    *,
    force: bool = False,
    keep_artefacts: bool = False,
    dry_run: bool = False,
    confirm: Callable[[str], bool] | None = None,
    poll_seconds: float = 10.0,
) -> None:
    """Prints what tearing an instance down by its id does, then does it (unless a dry run, or not confirmed).

    Raises:
        SleeperError: If the id is not an instance id, AWS is not configured, or the tear down fails.
    """
    from sleeper.core.properties import instance_common as common
    from sleeper.runtime.aws import load_deployed_instance, plan_teardown, tear_down

    if common.ID.problem(instance_id) is not None or "/" in instance_id:
        raise SleeperError(f"{instance_id!r} is neither a configuration directory nor an instance id")
    deployed = load_deployed_instance(instance_id, missing_ok=True)
    plan = plan_teardown(deployed, keep_artefacts=keep_artefacts)
    for line in plan.describe():
        console.print(line, markup=False, highlight=False)
    if dry_run:
        return
    ask = confirm or (lambda question: typer.confirm(question, default=False))
    if not force and not ask(f"Tear down instance {instance_id}?"):
        raise SleeperError("not torn down: not confirmed (--force skips the question)")
    tear_down(plan, deployed.clients, poll_seconds=poll_seconds,
              report=lambda line: console.print(line, markup=False, highlight=False))  # fmt: skip
    console.print(f"Torn down instance {instance_id}", markup=False, highlight=False)


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


def docker_available() -> bool:
    """Whether a ``docker`` command is on the path and its daemon answers (``docker info``)."""
    docker = shutil.which("docker")
    if docker is None:
        return False
    try:
        return subprocess.run([docker, "info"], capture_output=True, timeout=60, check=False).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def artefacts_command(
    config: OptionalConfigArgument = None,
    instance_id: Annotated[
        str | None, typer.Option("--instance-id", help="The deployed instance's properties, from its config bucket.")
    ] = None,
    wheel: Annotated[
        list[Path] | None,
        typer.Option(
            "--wheel", help="An iterator wheel (.whl) or a project to build one from, to upload (repeatable)."
        ),
    ] = None,
    image_tag: Annotated[str, typer.Option("--image-tag", help="The tag the images are pushed with.")] = "latest",
    all_images: Annotated[
        bool, typer.Option("--all-images", help="Every image, not only those the instance's stacks run.")
    ] = False,
    dry_run: DryRunOption = False,
) -> None:
    """Create the artefacts bucket and ECR repositories, upload iterator wheels, and build and push the images with
    Docker, for 'sleeper deploy --artefacts ecr' (as Sleeper's artefacts deployment and uploadArtefacts)."""
    if (config is None) == (instance_id is None):
        raise SleeperError("give a configuration directory, or --instance-id ID of a deployed instance")
    run_artefacts(config, instance_id=instance_id, wheels=wheel or (), image_tag=image_tag, all_images=all_images,
                  dry_run=dry_run)  # fmt: skip


def run_artefacts(
    config: Path | None,
    *,
    instance_id: str | None = None,
    wheels: Sequence[Path] = (),
    image_tag: str = "latest",
    all_images: bool = False,
    dry_run: bool = False,
    docker_present: bool | None = None,
    docker: Callable[[Sequence[str], bytes | None], int] | None = None,
) -> None:
    """Prints the artefacts plan (where each image, wheel and repository goes), then creates and uploads them
    (unless a dry run).

    Raises:
        SleeperError: If the configuration is invalid, a wheel is missing, Docker is absent (and not a dry run) or a
            build, push or AWS call fails.
    """
    from sleeper.core.deploy import artefacts_plan, load_configuration_dir

    deployed = None
    if instance_id is not None:
        from sleeper.runtime.aws import load_deployed_instance

        deployed = load_deployed_instance(instance_id)
        properties = deployed.properties
    else:
        assert config is not None
        properties = load_configuration_dir(config).properties
    plan = artefacts_plan(properties, all_images=all_images)
    root = Path(__file__).resolve().parents[2]
    projects = [w for w in wheels if w.is_dir()]
    for wheel in wheels:
        if wheel.is_dir():
            if not ((wheel / "pyproject.toml").is_file() or (wheel / "setup.py").is_file()):
                raise SleeperError(f"{wheel}: a directory given as --wheel must be a Python project (pyproject.toml)")
        elif not wheel.is_file() or wheel.suffix != ".whl":
            raise SleeperError(f"{wheel}: not a wheel file (.whl) or a Python project directory")
    files = [w for w in wheels if not w.is_dir()]
    has_docker = docker_available() if docker_present is None else docker_present
    has_sources = (root / "containers" / "lambda" / "Dockerfile").is_file()

    def say(line: str) -> None:
        console.print(line, markup=False, highlight=False)

    say(f"Artefacts of instance {plan.instance_id} (deployment {plan.deployment_id}):")
    say(f"  bucket s3://{plan.bucket} (sleeper.jars.bucket), created if absent")
    for wheel in files:
        say(f"  upload {wheel} to s3://{plan.bucket}/{wheel.name}")
    for project in projects:
        say(f"  build a wheel of {project} (pip wheel --no-deps) and upload it to s3://{plan.bucket}/<its file name>")
    listed = set(plan.wheel_keys)
    for key in plan.wheel_keys:
        if key not in {w.name for w in files} and not projects:
            say(f"  (sleeper.userjars lists {key}: it must be in s3://{plan.bucket} already)")
    for wheel in files:
        if wheel.name not in listed:
            say(f"  (add {wheel.name} to sleeper.userjars for the instance to install it)")
    for image in plan.images:
        say(f"  image {image.image}: docker build --platform {image.platform} -f {image.dockerfile} "
            f"-> ECR repository {image.repository}, tag {image_tag}")  # fmt: skip
    if not has_docker or not has_sources:
        why = "Docker is not available" if not has_docker else f"there is no containers/ beside the package in {root}"
        if dry_run:
            say(f"  ({why}: the images cannot be built here)")
            return
        raise SleeperError(
            f"cannot build the images: {why}; run 'sleeper artefacts' where Docker runs, from a checkout "
            "(--dry-run prints the plan)"
        )
    if dry_run:
        return
    from sleeper.adapters.aws import AwsClients
    from sleeper.runtime.aws import AwsRuntimeConfig, upload_artefacts

    clients = deployed.clients if deployed is not None else AwsClients(
        AwsRuntimeConfig.for_instance_id(plan.instance_id).settings
    )  # fmt: skip
    with tempfile.TemporaryDirectory(prefix="sleeper-wheels-") as built:
        uploads = [*files, *(build_wheel(project, Path(built)) for project in projects)]
        if docker is None:
            upload_artefacts(plan, clients, root=root, wheels=uploads, tag=image_tag, report=say)
        else:
            upload_artefacts(plan, clients, root=root, wheels=uploads, tag=image_tag, report=say, docker=docker)


def build_wheel(project: Path, directory: Path) -> Path:
    """Builds the wheel of a Python project (``pip wheel --no-deps``, this command's Python) into a directory.

    Raises:
        SleeperError: If pip fails or builds other than one wheel.
    """
    target = directory / project.name
    result = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(target), str(project)],
                            check=False)  # fmt: skip
    built = sorted(target.glob("*.whl")) if target.is_dir() else []
    if result.returncode != 0 or len(built) != 1:
        raise SleeperError(f"pip wheel of {project} failed (exit status {result.returncode}); see its output above")
    return built[0]


def register(app: typer.Typer) -> None:
    """Adds the commands to the ``sleeper`` command."""
    app.command("deploy")(deploy)
    app.command("teardown")(teardown)
    app.command("artefacts")(artefacts_command)
