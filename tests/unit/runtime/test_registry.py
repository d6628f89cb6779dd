"""The registry of operations: every entry points at code that exists, agrees with the instance property defaults, the
Dockerfiles reference only what is in the repository, and the runtimes take their queues, schedules and URL properties
from it."""

from __future__ import annotations

import ast
import importlib
import importlib.util
import re
import sys
from pathlib import Path

import pytest

from sleeper.core import operations
from sleeper.core.operations import CONTAINERS, HANDLERS, TriggerKind
from sleeper.core.properties import INSTANCE_PROPERTY_INDEX, InstanceProperties
from sleeper.runtime.aws.instance import queue_url_properties

ROOT = Path(__file__).resolve().parents[3]


def _module_exists(module: str) -> bool:
    return (ROOT / Path(*module.split("."))).with_suffix(".py").is_file()


def _entry_points() -> list[str]:
    entries = [spec.handler for spec in HANDLERS]
    entries += [spec.entry_point for spec in CONTAINERS if spec.entry_point is not None]
    return entries


def should_point_every_entry_at_an_existing_function() -> None:
    # Given every handler and container entry point
    entries = _entry_points()
    # When their modules are imported
    missing_modules = [e for e in entries if not _module_exists(e.partition(":")[0])]
    missing_functions = [
        entry
        for entry in entries
        if _module_exists(entry.partition(":")[0])
        and not callable(getattr(importlib.import_module(entry.partition(":")[0]), entry.partition(":")[2], None))
    ]
    # Then every module exists and exposes its function
    assert missing_modules == []
    assert missing_functions == []


def should_default_memory_and_timeout_to_their_instance_property_defaults() -> None:
    # Given default instance properties
    defaults = InstanceProperties()
    # When each handler's defaults are compared with the properties it names
    differences = []
    for h in HANDLERS:
        for prop, value in ((h.memory_property, h.memory_mb), (h.timeout_property, h.timeout_seconds)):
            if prop is not None and defaults.get_int(prop) != value:
                differences.append((h.name, prop, defaults.get_int(prop), value))
    # Then they agree
    assert differences == []


def should_name_only_defined_instance_properties() -> None:
    # Given every property name in the registry
    names = [
        prop
        for h in HANDLERS
        for prop in (h.memory_property, h.timeout_property, h.trigger.period_property, h.offline_property)
        if prop is not None
    ]
    # When looked up
    unknown = [name for name in names if INSTANCE_PROPERTY_INDEX.get(name) is None]
    # Then each is defined
    assert unknown == []


def should_trigger_every_handler_sensibly() -> None:
    # Given every handler
    problems = []
    consumed = {q for h in HANDLERS if h.trigger.kind is TriggerKind.SQS for q in h.trigger.queues}
    for h in HANDLERS:
        t = h.trigger
        if t.kind is TriggerKind.SQS:
            problems += [f"{h.name}: no URL property for {q}" for q in t.queues if q not in queue_url_properties()]
            if not t.queues:
                problems.append(f"{h.name}: SQS trigger without a queue")
        if t.kind is TriggerKind.SCHEDULE and t.rule is None:
            problems.append(f"{h.name}: schedule without a rule")
        if t.kind is TriggerKind.SCHEDULE and (t.period_property is None) == (t.fixed_period_seconds is None):
            problems.append(f"{h.name}: give a period property or a fixed period")
        if h.sends_to is not None and (not h.sends_to.endswith(".fifo") or h.sends_to not in consumed):
            problems.append(f"{h.name}: sends to {h.sends_to}, which is not a FIFO queue feeding a handler")
    # Then there are no problems
    assert problems == []


def should_look_up_handlers_and_containers_by_name() -> None:
    # Given a registered name and an unknown one
    # When looked up
    spec = operations.handler(operations.QUERY)
    # Then the registered one is found and the unknown one is an error naming it
    assert (spec.module, spec.function, spec.lambda_command) == (
        "sleeper.lambdas.sqs",
        "query",
        "sleeper.lambdas.sqs.query",
    )
    assert operations.container(operations.INGEST_IMAGE).dockerfile == "containers/ingest/Dockerfile"
    with pytest.raises(KeyError, match="nope"):
        operations.handler("nope")


@pytest.mark.parametrize("module", ["operations", "naming"])
def should_import_only_the_standard_library_and_core(module: str) -> None:
    # Given the source of the registry or of the naming module
    tree = ast.parse((ROOT / "sleeper" / "core" / f"{module}.py").read_text())
    # When its imports are listed
    imported = [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
    imported += [n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module]
    # Then each is standard library or sleeper.core
    bad = [m for m in imported if m.split(".")[0] not in sys.stdlib_module_names and not m.startswith("sleeper.core")]
    assert bad == []


_COPY = re.compile(r"^COPY\s+(?!--from)(.+?)\s+\S+$", re.MULTILINE)
_PYTHON_MODULE = re.compile(r'"-m",\s*"([\w.]+)"')


def should_build_every_container_from_paths_and_modules_that_exist() -> None:
    # Given every registered container's Dockerfile
    problems = []
    for spec in CONTAINERS:
        dockerfile = ROOT / spec.dockerfile
        if not dockerfile.is_file():
            problems.append(f"{spec.name}: no {spec.dockerfile}")
            continue
        text = dockerfile.read_text()
        # When the files it copies and the modules it runs are checked
        for sources in _COPY.findall(text):
            problems += [f"{spec.name}: copies missing {s}" for s in sources.split() if not (ROOT / s).exists()]
        for module in _PYTHON_MODULE.findall(text):
            if module != spec.module:
                problems.append(f"{spec.name}: runs {module}, registered {spec.module}")
            if not _module_exists(module):
                problems.append(f"{spec.name}: runs missing module {module}")
    # Then everything exists
    assert problems == []


def _resolve(path: str) -> object:
    module, _, attributes = path.partition(":")
    found: object = importlib.import_module(module)
    for attribute in attributes.split("."):
        found = getattr(found, attribute, None)
    return found


def should_name_runtime_neutral_feature_functions_that_exist() -> None:
    # Given every feature function the registry says a handler or container runs
    runs = [h.runs for h in HANDLERS if h.runs is not None] + [c.runs for c in CONTAINERS if c.runs is not None]
    # When each is looked up
    problems = [path for path in runs if not callable(_resolve(path))]
    problems += [path for path in runs if path.split(".")[1] in ("runtime", "adapters", "cli")]
    # Then each is a function of the feature code, not of a runtime
    assert problems == []
    assert len(runs) >= 20


def should_give_each_runtime_the_registry_queues() -> None:
    # Given the queues of the registry
    from sleeper.runtime.local.handlers import default_handlers
    from sleeper.runtime.local.instance import local_queue_settings

    local = {q.name: (q.fifo, q.visibility_timeout_seconds, q.max_receive_count) for q in operations.local_queues()}
    # When compared with the local instance's queues, its handlers and the AWS queue URL properties
    # Then the local instance has exactly the registry's local queues, each worked queue among them
    assert local_queue_settings() == local
    assert set(default_handlers()) <= set(local_queue_settings())
    # And an AWS instance finds each of its queues by the URL property the registry names, a defined property
    assert queue_url_properties() == {q.name: q.url_property for q in operations.aws_queues()}
    assert [p for p in queue_url_properties().values() if INSTANCE_PROPERTY_INDEX.get(p) is None] == []
    assert len({q.name for q in operations.QUEUES}) == len(operations.QUEUES)


def should_derive_the_local_schedules_from_the_registry_triggers() -> None:
    # Given the local runner's schedules and the handlers that run them locally
    from sleeper.runtime.local.handlers import default_handlers
    from sleeper.runtime.local.instance import local_queue_settings
    from sleeper.runtime.local.runner import SCHEDULES

    scheduled = {h.local_schedule.name: h for h in HANDLERS if h.local_schedule is not None}
    problems = []
    for schedule in SCHEDULES:
        spec = scheduled[schedule.name]
        # When each is compared with its handler's trigger
        if (schedule.period_property, schedule.unit_seconds) != (
            spec.trigger.period_property,
            spec.trigger.period_unit_seconds,
        ):
            problems.append(f"{schedule.name}: period {schedule.period_property} differs from {spec.name}'s rule")
        if schedule.per_table and schedule.queue != spec.sends_to:
            problems.append(f"{schedule.name}: sends to {schedule.queue}, the rule's trigger to {spec.sends_to}")
        if not schedule.queue.endswith(".fifo") or schedule.queue not in local_queue_settings():
            problems.append(f"{schedule.name}: {schedule.queue} is not a local FIFO queue")
        if schedule.queue not in default_handlers():
            problems.append(f"{schedule.name}: no local handler works {schedule.queue}")
    # Then each runs on its rule's period, to the queue of its work, once
    assert problems == []
    assert sorted(s.name for s in SCHEDULES) == sorted(scheduled)
    assert all(h.trigger.kind is TriggerKind.SCHEDULE for h in scheduled.values())
