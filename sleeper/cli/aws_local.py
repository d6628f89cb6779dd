"""``sleeper aws-local``: an emulated AWS instance on this machine (see docs/usage/aws-local.md).

``sleeper aws-local up --port PORT --instance-id ID`` starts a moto server on 127.0.0.1:PORT holding the instance,
prints the environment to export so that boto3 clients (and ``sleeper --instance aws:ID``) reach it, and runs the pump
delivering scheduled events, SQS batches and ECS / EMR tasks until Ctrl-C.
"""

from __future__ import annotations

import logging
import os
import shlex
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from sleeper.cli import common

if TYPE_CHECKING:
    from sleeper.emulator import EmulatedAwsInstance

__all__ = ["aws_local_app", "register", "up"]

aws_local_app = typer.Typer(help="An emulated AWS instance on this machine (a moto server).", no_args_is_help=True)


def _print_ready(emulated: EmulatedAwsInstance) -> None:
    console = common.console
    console.print(f"Emulated instance [bold]{emulated.instance_id}[/] on {emulated.endpoint}", highlight=False)
    console.print(f"Config bucket: s3://{emulated.config.config_bucket}/instance.properties", highlight=False)
    console.print(f"WebSocket query API: {emulated.websocket_url} (SigV4-signed connections)", highlight=False)
    console.print(f"REST API: {emulated.rest_api_url} (SigV4-signed requests)", highlight=False)
    console.print("Export these to reach it (boto3, Sleeper's Python client, sleeper --instance aws:ID):")
    for name, value in emulated.environment().items():
        console.print(f"export {name}={shlex.quote(value)}", markup=False, highlight=False)
    console.print("Running the pump (scheduled events, SQS batches, ECS tasks, EMR jobs). Ctrl-C stops it.")


@aws_local_app.command("up")
def up(
    port: Annotated[int, typer.Option("--port", help="The port on 127.0.0.1 to serve AWS on.")] = 5000,
    instance_id: Annotated[str, typer.Option("--instance-id", help="The instance id.")] = "local",
    properties: Annotated[
        Path | None, typer.Option("--properties", help="A Java properties file of further instance properties.")
    ] = None,
    retry_after: Annotated[
        float | None,
        typer.Option(
            "--retry-after",
            help="Seconds before a message a handler failed is delivered again (default: the queue's visibility "
            "timeout, as on AWS).",
        ),
    ] = None,
    max_tasks: Annotated[int, typer.Option("--max-tasks", help="Task processes allowed at once.")] = 2,
    task_logs: Annotated[
        Path | None, typer.Option("--task-logs", help="A directory for each task process's output (default: here).")
    ] = None,
    interval: Annotated[float, typer.Option("--interval", help="Seconds between idle pump rounds.")] = 1.0,
) -> None:
    """Start an emulated AWS instance and deliver what AWS would to it, in the foreground until stopped."""
    common.refuse_stdin([properties], "--properties", "the emulated instance reads the properties file by path")
    common.refuse_stdin([task_logs], "--task-logs", "it is a directory")
    try:
        from sleeper.emulator import load_properties_file, serve
    except ImportError as e:
        from sleeper.core import missing_extra

        raise missing_extra(e, "sleeper aws-local", "aws-local") or e from None

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s %(message)s")
    values = load_properties_file(properties) if properties is not None else None
    stop = threading.Event()

    def ready(emulated: EmulatedAwsInstance) -> None:
        # Handlers and tasks of this process find the instance as a deployed Lambda or container would.
        os.environ.update(emulated.environment())
        _print_ready(emulated)

    try:
        serve(
            instance_id,
            port=port,
            properties=values,
            stop=stop,
            on_ready=ready,
            retry_failed_after_seconds=retry_after,
            max_running_tasks=max_tasks,
            task_log_dir=task_logs,
            interval_seconds=interval,
        )
    except KeyboardInterrupt:
        stop.set()
    common.console.print("Stopped: the emulated instance is gone.")


def register(app: typer.Typer) -> None:
    """Adds ``sleeper aws-local`` to the CLI."""
    app.add_typer(aws_local_app, name="aws-local")
