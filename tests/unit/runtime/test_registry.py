"""The handler and container registry: every entry points at code that exists (or is listed as pending), agrees with
the stacks' names and the instance property defaults, and the Dockerfiles reference only what is in the repository."""

from __future__ import annotations

import ast
import importlib
import importlib.util
import re
import sys
from pathlib import Path

import pytest

from sleeper.core.properties import INSTANCE_PROPERTY_INDEX, InstanceProperties
from sleeper.runtime import registry
from sleeper.runtime.aws import QUEUE_URL_PROPERTIES
from sleeper.runtime.registry import CONTAINERS, HANDLERS, TriggerKind

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


def should_name_every_handler_the_stacks_deploy() -> None:
    # Given the handler names the stacks use
    spec = importlib.util.spec_from_file_location("_stack_handlers", ROOT / "stacks" / "handlers.py")
    assert spec is not None and spec.loader is not None
    stack_handlers = importlib.util.module_from_spec(spec)
    sys.modules["_stack_handlers"] = stack_handlers
    try:
        spec.loader.exec_module(stack_handlers)
    finally:
        del sys.modules["_stack_handlers"]
    names = {v for k, v in vars(stack_handlers).items() if k.isupper() and isinstance(v, str)}
    # When compared with the registry
    registered = {h.name for h in HANDLERS}
    # Then they are the same set, each registered once
    assert names == registered
    assert len(registered) == len(HANDLERS)


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
            problems += [f"{h.name}: no URL property for {q}" for q in t.queues if q not in QUEUE_URL_PROPERTIES]
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
    spec = registry.handler(registry.QUERY)
    # Then the registered one is found and the unknown one is an error naming it
    assert (spec.module, spec.function, spec.lambda_command) == ("lambdas.query", "handler", "lambdas.query.handler")
    assert registry.container(registry.INGEST_IMAGE).dockerfile == "containers/ingest/Dockerfile"
    with pytest.raises(KeyError, match="nope"):
        registry.handler("nope")


def should_import_only_the_standard_library_and_core() -> None:
    # Given the registry's source
    tree = ast.parse((ROOT / "sleeper" / "runtime" / "registry.py").read_text())
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
