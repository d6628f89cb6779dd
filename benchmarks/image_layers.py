"""Measure the Python layer of each container image, for x86_64 and arm64, without Docker.

Images cannot be built here (no Docker engine, no registry), so this measures what can be measured honestly: for each
``containers/*/Dockerfile`` it reads the base image, the Python version and the extras the Dockerfile's
``pip install`` names, and installs that same requirement set (this repository's wheel with those extras, under
``constraints.txt``) with ``pip install --target`` for Linux x86_64 and for Linux aarch64 (``--platform
manylinux..._<arch> --only-binary=:all:``, so only published wheels are used, as an ARM64 build would need them or a
compiler). Reported per image and architecture: the bytes the installed files take (the layer's uncompressed size,
``.pyc`` files compiled by this interpreter included, as ``pip install`` in the image compiles them) and the bytes
after gzip (about what a registry stores for the layer), and which dependencies have no wheel for the architecture.

A dependency published only as a source distribution (pyspark) is built once with ``pip wheel`` and used if the
wheel it builds is pure Python (``none-any``: the same on every architecture); one that builds a platform wheel is
reported as lacking a wheel for the architecture. Images with the same Python version and extras share one install.

These are layer sizes, not image sizes: the base image (whose compressed size is taken from the registry's manifest,
unknown here since the registry is not reachable) and the layers the Dockerfile adds with apt or dnf are not counted.

The last line printed is one JSON object with every figure.

Usage: ``.venv/bin/python benchmarks/image_layers.py [--work DIR] [--images lambda,compaction]``.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import tempfile
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
ARCHES = {"x86_64": "x86_64", "arm64": "aarch64"}
_GLIBC_MINORS = range(17, 35)  # manylinux_2_17 .. manylinux_2_34: every base image here has glibc 2.34 or later
_MISSING = re.compile(r"No matching distribution found for ([A-Za-z0-9_.\-]+)")
_UNAVAILABLE = re.compile(r"no matching distributions available for your environment:\n((?:[ \t]+\S+\n?)+)")


@dataclass(frozen=True, slots=True)
class ImageSpec:
    """What a Dockerfile installs: its base image, Python version, the package's extras and the requirements named
    beside the package in the same ``pip install`` (``"pandas<3"``)."""

    name: str
    base: str
    python: str
    extras: tuple[str, ...]
    others: tuple[str, ...] = ()


def read_dockerfile(path: Path) -> ImageSpec:
    """The base image (``FROM``), the Python version (``python:3.X`` in the base, else ``python3.X`` in a command)
    the extras of the package's ``pip install`` (``"...[aws,spark]"``) and the quoted requirements that follow it on
    the same command (``"...[aws]" "pandas<3"``)."""
    text = path.read_text(encoding="utf-8")
    base = re.search(r"^FROM\s+(\S+)", text, re.MULTILINE)
    if base is None:
        raise ValueError(f"{path}: no FROM line")
    version = re.search(r"python:?(3\.\d+)", base.group(1)) or re.search(r"python(3\.\d+)", text)
    extras = re.search(r'pip install[^\n]*(?:\\\n[^\n]*)*?\[([a-z,\-]+)\]"((?:[ \t]+"[^"\s]+")*)', text)
    return ImageSpec(
        name=path.parent.name,
        base=base.group(1),
        python=version.group(1) if version else "3.11",
        extras=tuple(extras.group(1).split(",")) if extras else (),
        others=tuple(re.findall(r'"([^"]+)"', extras.group(2))) if extras else (),
    )


def _platform_options(arch: str, python: str) -> list[str]:
    options = ["--only-binary=:all:", "--python-version", python, "--implementation", "cp"]
    options += ["--platform", f"manylinux2014_{arch}"]
    for minor in _GLIBC_MINORS:
        options += ["--platform", f"manylinux_2_{minor}_{arch}"]
    return options


def _pip(*args: str) -> subprocess.CompletedProcess[str]:
    """pip, its output and errors together in ``stdout``."""
    return subprocess.run(
        [sys.executable, "-m", "pip", "--disable-pip-version-check", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        check=False,
    )


def _unavailable(output: str) -> list[str]:
    """The distributions pip found no wheel of (named in either of its two ways of saying so)."""
    names = [re.split(r"[<>=!~\[;]", m)[0] for m in _MISSING.findall(output)]
    for block in _UNAVAILABLE.findall(output):
        names += block.split()
    return list(dict.fromkeys(names))


def _pins() -> dict[str, str]:
    pins: dict[str, str] = {}
    for line in (ROOT / "constraints.txt").read_text(encoding="utf-8").splitlines():
        name, sep, version = line.strip().partition("==")
        if sep and not name.startswith("#"):
            pins[_normal(name)] = version.split(";")[0].strip()
    return pins


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def build_project_wheel(work: Path) -> Path:
    """This repository built as a wheel (what ``pip install /opt/sleeper[...]`` in a Dockerfile installs)."""
    out = work / "project"
    done = _pip("wheel", "--no-deps", "-w", str(out), str(ROOT))
    if done.returncode != 0:
        raise RuntimeError(f"cannot build the project's wheel:\n{done.stderr[-2000:]}")
    return next(out.glob("*.whl"))


def _build_from_source(name: str, work: Path, wheelhouse: Path) -> bool:
    """Builds a dependency published only as a source distribution; True if the wheel is pure Python."""
    pin = _pins().get(_normal(name))
    scratch = work / f"sdist-{_normal(name)}"
    done = _pip("wheel", "--no-deps", "-w", str(scratch), f"{name}=={pin}" if pin else name)
    built = list(scratch.glob("*.whl"))
    if done.returncode != 0 or not built:
        return False
    if not built[0].name.endswith("-none-any.whl"):
        return False
    wheelhouse.mkdir(parents=True, exist_ok=True)
    shutil.copy2(built[0], wheelhouse / built[0].name)
    return True


def install(spec: ImageSpec, arch: str, project: Path, work: Path, wheelhouse: Path) -> tuple[Path | None, list[str]]:
    """Installs the image's requirement set for one architecture; returns the target directory (None if it could
    not be installed) and the dependencies that have no wheel for it."""
    missing: list[str] = []
    requirement = f"{project}[{','.join(spec.extras)}]" if spec.extras else str(project)
    for _ in range(10):
        named = "-".join(spec.extras + tuple(re.sub(r"\W+", "", other) for other in spec.others)) or "base"
        target = work / f"py{spec.python}-{named}-{arch}"
        shutil.rmtree(target, ignore_errors=True)
        done = _pip(
            "install",
            "--target",
            str(target),
            "-c",
            str(ROOT / "constraints.txt"),
            "--find-links",
            str(wheelhouse),
            *_platform_options(ARCHES[arch], spec.python),
            requirement,
            *spec.others,
        )
        if done.returncode == 0:
            return target, missing
        names = _unavailable(done.stdout)
        if not names:
            raise RuntimeError(f"pip install for {spec.name} {arch} failed:\n{done.stdout[-3000:]}")
        unbuilt = [n for n in names if n in missing or not _build_from_source(n, work, wheelhouse)]
        if unbuilt:
            missing += [n for n in unbuilt if n not in missing]
            return None, missing
    return None, missing


def _arm64_missing(x86_target: Path, python: str, work: Path, wheelhouse: Path) -> list[str]:
    """The distributions of an x86_64 install that are not pure Python and have no aarch64 wheel of that version."""
    missing: list[str] = []
    for info in sorted(x86_target.glob("*.dist-info")):
        wheel = (info / "WHEEL").read_text(encoding="utf-8")
        if all(tag.endswith("-none-any") for tag in re.findall(r"^Tag: (\S+)", wheel, re.MULTILINE)):
            continue
        metadata = (info / "METADATA").read_text(encoding="utf-8", errors="replace")
        name = re.search(r"^Name: (.+)$", metadata, re.MULTILINE)
        version = re.search(r"^Version: (.+)$", metadata, re.MULTILINE)
        if name is None or version is None:
            continue
        done = _pip(
            "download",
            "--no-deps",
            "-d",
            str(work / "arm64-probe"),
            "--find-links",
            str(wheelhouse),
            *_platform_options(ARCHES["arm64"], python),
            f"{name.group(1).strip()}=={version.group(1).strip()}",
        )
        if done.returncode != 0:
            missing.append(name.group(1).strip())
    return missing


def sizes(target: Path, top: int = 5) -> dict[str, object]:
    """The installed files' bytes and their bytes after gzip (level 6, as ``docker push`` compresses a layer), and
    the ``top`` largest top-level entries (packages) by bytes."""
    raw = packed = files = 0
    by_entry: dict[str, int] = {}
    for path in target.rglob("*"):
        if path.is_file() and not path.is_symlink():
            files += 1
            entry = path.relative_to(target).parts[0]
            compressor = zlib.compressobj(6, zlib.DEFLATED, 31)
            with path.open("rb") as f:
                while chunk := f.read(1 << 20):
                    raw += len(chunk)
                    by_entry[entry] = by_entry.get(entry, 0) + len(chunk)
                    packed += len(compressor.compress(chunk))
            packed += len(compressor.flush())
    largest = sorted(by_entry.items(), key=lambda item: -item[1])[:top]
    return {"bytes": raw, "gzip_bytes": packed, "files": files, "largest": dict(largest)}


def _mib(value: int | None) -> str:
    return "-" if value is None else f"{value / (1 << 20):.0f} MiB"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work", help="where to install (default: a temporary directory, removed afterwards)")
    parser.add_argument("--images", help="comma-separated image names (default: every containers/*/Dockerfile)")
    args = parser.parse_args()
    specs = [read_dockerfile(p) for p in sorted((ROOT / "containers").glob("*/Dockerfile"))]
    if args.images:
        wanted = set(args.images.split(","))
        specs = [s for s in specs if s.name in wanted]
    work = Path(args.work) if args.work else Path(tempfile.mkdtemp(prefix="sleeper-image-layers-"))
    work.mkdir(parents=True, exist_ok=True)
    wheelhouse = work / "wheelhouse"
    wheelhouse.mkdir(exist_ok=True)
    try:
        project = build_project_wheel(work)
        measured: dict[tuple[str, tuple[str, ...], str], dict[str, object]] = {}
        result: dict[str, object] = {"python": sys.version.split()[0], "images": {}}
        for spec in specs:
            entry: dict[str, object] = {"base": spec.base, "base_compressed_bytes": None, "python": spec.python,
                                        "extras": list(spec.extras), "others": list(spec.others)}  # fmt: skip
            for arch in ARCHES:
                key = (spec.python, spec.extras + spec.others, arch)
                if key not in measured:
                    target, missing = install(spec, arch, project, work, wheelhouse)
                    figures: dict[str, Any] = {"no_wheel": missing}
                    if target is not None:
                        figures.update(sizes(target))
                        if arch == "x86_64":
                            figures["no_arm64_wheel"] = _arm64_missing(target, spec.python, work, wheelhouse)
                        shutil.rmtree(target, ignore_errors=True)
                    measured[key] = figures
                entry[arch] = measured[key]
            x86, arm = entry["x86_64"], entry["arm64"]
            assert isinstance(x86, dict) and isinstance(arm, dict)
            print(
                f"{spec.name:16} {spec.base:48} x86_64 {_mib(x86.get('bytes'))} (gzip {_mib(x86.get('gzip_bytes'))})"
                f"  arm64 {_mib(arm.get('bytes'))} (gzip {_mib(arm.get('gzip_bytes'))})"
                f"  no arm64 wheel: {', '.join(x86.get('no_arm64_wheel', []) or arm['no_wheel']) or 'none'}"
            )
            result["images"][spec.name] = entry  # type: ignore[index]
        result["built_from_source"] = sorted(p.name for p in wheelhouse.glob("*.whl"))
        print(json.dumps(result))
    finally:
        if not args.work:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
