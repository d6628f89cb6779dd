"""``sleeper admin``: a menu over the same commands, for operators who prefer Sleeper's menu-driven admin client.

Each choice asks for what it needs (a table name, a property) and runs the same command as the command line does,
so the menu and the commands never disagree. Prompts read standard input through rich, so the menu can be driven by
piping answers in.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from rich.console import Console
from rich.prompt import Prompt
from rich.table import Table


@dataclass(frozen=True, slots=True)
class MenuItem:
    """One choice: its label and how to build the command's arguments from the operator's answers."""

    label: str
    arguments: Callable[[Callable[[str], str]], list[str]]


def _table(ask: Callable[[str], str]) -> str:
    return ask("Table name")


ITEMS: tuple[MenuItem, ...] = (
    MenuItem("Instance status", lambda ask: ["report", "status"]),
    MenuItem("View instance properties", lambda ask: ["instance", "properties"]),
    MenuItem(
        "Edit an instance property",
        lambda ask: ["instance", "properties", "--set", f"{ask('Property name')}={ask('New value')}"],
    ),
    MenuItem("List tables", lambda ask: ["table", "list"]),
    MenuItem("View table properties", lambda ask: ["table", "properties", _table(ask)]),
    MenuItem(
        "Edit a table property",
        lambda ask: ["table", "properties", _table(ask), "--set", f"{ask('Property name')}={ask('New value')}"],
    ),
    MenuItem("Partitions report", lambda ask: ["report", "partitions", _table(ask)]),
    MenuItem("Files report", lambda ask: ["report", "files", _table(ask)]),
    MenuItem("Ingest jobs report", lambda ask: ["report", "ingest-jobs", _table(ask)]),
    MenuItem("Rejected ingest jobs", lambda ask: ["report", "ingest-jobs"]),
    MenuItem("Compaction jobs report", lambda ask: ["report", "compaction-jobs", _table(ask)]),
    MenuItem("Compaction tasks report", lambda ask: ["report", "tasks", "compaction"]),
    MenuItem("Ingest tasks report", lambda ask: ["report", "tasks", "ingest"]),
    MenuItem("Dead letters report", lambda ask: ["report", "dead-letters"]),
    MenuItem("Retry dead letters", lambda ask: ["dead-letters", "retry"]),
    MenuItem("Take a table offline", lambda ask: ["table", "offline", _table(ask)]),
    MenuItem("Put a table online", lambda ask: ["table", "online", _table(ask)]),
    MenuItem("Pause the system", lambda ask: ["pause"]),
    MenuItem("Resume the system", lambda ask: ["resume"]),
    MenuItem("View instance properties by group", lambda ask: ["instance", "properties", "--group", ask("Group")]),
    MenuItem(
        "View table properties by group", lambda ask: ["table", "properties", _table(ask), "--group", ask("Group")]
    ),
    MenuItem(
        "Compaction job in detail", lambda ask: ["report", "compaction-jobs", _table(ask), "--job", ask("Job id")]
    ),
    MenuItem("Ingest job in detail", lambda ask: ["report", "ingest-jobs", "--job", ask("Job id")]),
)


def run_menu(console: Console, run_command: Callable[[list[str]], int], items: Sequence[MenuItem] = ITEMS) -> int:
    """Shows the menu until the operator quits (0 or end of input); returns how many commands failed."""
    failures = 0

    def ask(question: str) -> str:
        return Prompt.ask(question, console=console).strip()

    while True:
        menu = Table(title="Sleeper admin", show_header=False)
        menu.add_column(justify="right")
        menu.add_column()
        menu.add_row("0", "Exit")
        for number, item in enumerate(items, start=1):
            menu.add_row(str(number), item.label)
        console.print(menu)
        try:
            choice = Prompt.ask(
                "Choice", console=console, choices=[str(i) for i in range(len(items) + 1)], show_choices=False
            )
        except EOFError:
            return failures
        if choice == "0":
            return failures
        try:
            argv = items[int(choice) - 1].arguments(ask)
        except EOFError:
            return failures
        if run_command(argv) != 0:
            failures += 1
