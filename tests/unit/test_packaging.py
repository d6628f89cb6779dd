"""The package can be adopted: its license is stated and shipped, and every install takes its versions from the lock.

``pyproject.toml`` declares the license as an SPDX expression with ``LICENSE`` and ``NOTICE`` as its license files
(so the wheel carries both) and keeps version ranges; ``constraints.txt`` pins the exact version of every package the
Makefile installs, and the Makefile and the container images install with it; docs/development.md says how to
refresh it. mypy reads every aws_cdk module the package imports (and skips the rest of aws-cdk-lib).
"""

from __future__ import annotations

import re
import tomllib
from importlib.metadata import PackageNotFoundError, distribution
from pathlib import Path
from typing import Any

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[2]
LOCK = ROOT / "constraints.txt"


def _project() -> dict[str, Any]:
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


def _pins() -> dict[str, str]:
    pins: dict[str, str] = {}
    for number, line in enumerate(LOCK.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip() or line.startswith("#"):
            continue
        match = re.fullmatch(r"([A-Za-z0-9][A-Za-z0-9._-]*)==([A-Za-z0-9.+!-]+)", line)
        assert match, f"constraints.txt line {number} is not an exact pin (name==version): {line!r}"
        name = canonicalize_name(match.group(1))
        assert name not in pins, f"constraints.txt pins {name} twice"
        pins[name] = match.group(2)
    return pins


def _makefile_extras() -> list[str]:
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    match = re.search(r"^LOCK_EXTRAS := (.+)$", makefile, re.MULTILINE)
    assert match, "the Makefile names the extras it installs in LOCK_EXTRAS"
    return [extra.strip() for extra in match.group(1).split(",")]


def _requirements(extras: list[str]) -> list[Requirement]:
    project = _project()["project"]
    listed = list(project["dependencies"])
    for extra in extras:
        listed += project["optional-dependencies"][extra]
    return [Requirement(requirement) for requirement in listed]


def should_ship_the_apache_license_and_a_notice_naming_sleeper() -> None:
    # Given the license files at the repository's root
    license_text = (ROOT / "LICENSE").read_text(encoding="utf-8")
    notice = (ROOT / "NOTICE").read_text(encoding="utf-8")

    # Then LICENSE is the Apache License 2.0 in full, and NOTICE says what the port derives from and whose it is
    assert "Apache License" in license_text and "Version 2.0, January 2004" in license_text
    assert (
        "END OF TERMS AND CONDITIONS" in license_text
        and "9. Accepting Warranty or Additional Liability" in license_text
    )
    assert "https://github.com/gchq/sleeper" in notice and "Crown Copyright" in notice
    assert "Apache License, Version 2.0" in notice
    for derived in ("designs", "formats", "property names", "behaviour"):
        assert derived in notice


def should_declare_the_license_as_spdx_with_its_files() -> None:
    # Given the package metadata
    config = _project()
    project = config["project"]

    # Then the license is an SPDX expression naming both files, with no legacy license classifier beside it
    assert project["license"] == "Apache-2.0"
    assert project["license-files"] == ["LICENSE", "NOTICE"]
    assert not [c for c in project["classifiers"] if c.startswith("License ::")]
    assert project["classifiers"] and project["urls"]
    # And the build backend is one that understands them (setuptools 77 and later)
    (setuptools,) = [Requirement(r) for r in config["build-system"]["requires"] if r.startswith("setuptools")]
    assert not setuptools.specifier.contains(Version("76.99")), setuptools


def should_keep_ranges_in_the_package_metadata() -> None:
    # Given every requirement of the package and its extras
    project = _project()["project"]
    extras = list(project["optional-dependencies"])

    # Then none is pinned to one version: the lock does that
    pinned = [str(r) for r in _requirements(extras) if any(s.operator in ("==", "===") for s in r.specifier)]
    assert pinned == []


def should_pin_every_requirement_the_makefile_installs() -> None:
    # Given the lock and the requirements of the extras the Makefile installs
    pins = _pins()
    requirements = _requirements(_makefile_extras())

    # Then each is pinned to a version its range allows, and so are pip, which the Makefile upgrades, and uv, which
    # installs the rest
    for requirement in requirements:
        name = canonicalize_name(requirement.name)
        assert name in pins, f"constraints.txt does not pin {requirement.name}: run `make lock`"
        assert requirement.specifier.contains(Version(pins[name]), prereleases=True), (
            f"constraints.txt pins {name}=={pins[name]}, outside pyproject.toml's {requirement}: run `make lock`"
        )
    assert "pip" in pins
    assert "uv" in pins
    assert "sleeper-lsm" not in pins


def should_pin_every_package_installed_with_those_extras() -> None:
    # Given the installed package and what its extras pulled in, following each installed distribution's requirements
    try:
        distribution("sleeper-lsm")
    except PackageNotFoundError:
        pytest.skip("the package is not installed")
    pins = _pins()
    seen: set[str] = set()
    pending: list[tuple[str, frozenset[str]]] = [("sleeper-lsm", frozenset(_makefile_extras()))]
    unpinned: list[str] = []
    while pending:
        name, extras = pending.pop()
        key = f"{canonicalize_name(name)}[{','.join(sorted(extras))}]"
        if key in seen:
            continue
        seen.add(key)
        if canonicalize_name(name) != "sleeper-lsm" and canonicalize_name(name) not in pins:
            unpinned.append(name)
        for line in distribution(name).requires or []:
            requirement = Requirement(line)
            environments = [{"extra": extra} for extra in extras] or [{"extra": ""}]
            if requirement.marker is None or any(requirement.marker.evaluate(env) for env in environments):
                pending.append((requirement.name, frozenset(requirement.extras)))

    # Then every one of them is in the lock
    assert sorted(set(unpinned)) == [], "constraints.txt misses these: run `make lock`"


def should_install_from_the_lock_in_the_makefile_and_every_image() -> None:
    # Given every pip install of the Makefile's install targets and of the container images
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    installs = [line for line in makefile.splitlines() if "pip install" in line and "$(PY)" in line]
    dockerfiles = sorted((ROOT / "containers").glob("*/Dockerfile"))

    # Then each takes the lock
    assert installs and all("-c $(LOCK)" in line for line in installs), installs
    assert re.search(r"^LOCK := constraints\.txt$", makefile, re.MULTILINE)
    assert dockerfiles
    for dockerfile in dockerfiles:
        text = dockerfile.read_text(encoding="utf-8").replace("\\\n", " ")
        commands = [line for line in text.splitlines() if re.search(r"\bpip install\b", line)]
        assert commands, f"{dockerfile.relative_to(ROOT)} installs nothing"
        for command in commands:
            assert re.search(r"-c \S*constraints\.txt", command), f"{dockerfile.relative_to(ROOT)}: {command.strip()}"
        copies = " ".join(line for line in text.splitlines() if line.startswith("COPY "))
        for needed in ("constraints.txt", "LICENSE", "NOTICE"):
            assert re.search(rf"(^|\s){needed}\s", copies), f"{dockerfile.relative_to(ROOT)} does not copy {needed}"


def should_say_how_to_refresh_the_lock() -> None:
    # Given the development guide and the Makefile
    guide = (ROOT / "docs" / "development.md").read_text(encoding="utf-8")
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")

    # Then the guide names the lock and the command that refreshes it, and the Makefile has that target
    assert "constraints.txt" in guide and "make lock" in guide
    assert re.search(r"^lock:", makefile, re.MULTILINE)


def should_type_check_every_aws_cdk_module_the_package_imports() -> None:
    # Given the aws_cdk modules mypy reads (it takes the others as Any, to skip most of aws-cdk-lib's 350-odd modules)
    overrides = _project()["tool"]["mypy"]["overrides"]
    read = {name for o in overrides if o.get("follow_imports") == "normal" for name in o["module"]}
    assert [o["module"] for o in overrides if o.get("follow_imports") == "skip"] == [["aws_cdk.*"]]
    # When every aws_cdk module the package and the CDK app import is found (``from aws_cdk import x`` imports a
    # module when x is lower case, as aws-cdk-lib names its modules; ``Duration`` or ``Stack`` is a class of the root)
    imported = {"aws_cdk"}
    for path in [ROOT / "app.py", *sorted((ROOT / "sleeper").rglob("*.py"))]:
        text = path.read_text(encoding="utf-8")
        imported.update(re.findall(r"^\s*(?:import|from) (aws_cdk\.\w+)", text, flags=re.MULTILINE))
        for group, line in re.findall(r"^\s*from aws_cdk import (?:\(([^)]*)\)|(.*))$", text, flags=re.MULTILINE):
            for name in (group or line).split(","):
                if name.strip() and name.split()[0][0].islower():
                    imported.add(f"aws_cdk.{name.split()[0]}")
    # Then mypy reads each of them: a module missing from the list would be checked as Any, silently
    assert len(imported) > 10 and sorted(imported - read) == []
