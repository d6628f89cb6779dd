"""Getting users' iterator code to where the work runs on AWS: wheels in the jars bucket, installed at start-up.

Sleeper ships Java iterators as jars listed in ``sleeper.userjars`` (keys in ``sleeper.jars.bucket``) and loads them
at start-up. This port does the same with Python wheels: list the wheel's key in ``sleeper.userjars`` beside any
jars, and every process that runs iterators (the Lambda functions, the ECS compaction and ingest tasks, the bulk
import Spark driver and its executors) calls :func:`install_user_code` before it loads an iterator. Each listed
wheel is read from the jars bucket and unpacked into one directory, which is then added as a site directory, so its
packages import as if installed. Jars cannot run here: they are reported in the log, and an iterator naming a Java
class that this port does not map then fails to load with a clear error (nothing is applied silently in its place).

Only pure-Python wheels (``py3-none-any`` and the like) are installed; a wheel with compiled code for one platform
is refused, since the images' platforms differ (build a derived image instead: docs/usage/iterators.md).
"""

from __future__ import annotations

import io
import logging
import re
import site
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from sleeper.core import SleeperError, user_wheel_keys
from sleeper.core.properties import JARS_BUCKET, USER_JARS, InstanceProperties
from sleeper.io import FileSystemOptions, resolve

__all__ = [
    "USER_CODE_DIRECTORY",
    "InstalledCode",
    "UserCodeError",
    "install_user_code",
    "install_wheels",
    "user_code_locations",
]

_LOG = logging.getLogger(__name__)

USER_CODE_DIRECTORY = "sleeper-user-code"
"""The directory, under the system's temporary directory (the only writable place on Lambda), wheels go to."""

_WHEEL = re.compile(r"(?P<name>[^-]+)-(?P<version>[^-]+)(-[^-]+)?-(?P<python>[^-]+)-(?P<abi>[^-]+)-(?P<platform>[^-]+)")
_installed: dict[str, Path] = {}


class UserCodeError(SleeperError):
    """A wheel listed in ``sleeper.userjars`` cannot be installed: it is missing, not a wheel, or not pure Python."""


@dataclass(frozen=True, slots=True)
class InstalledCode:
    """What :func:`install_user_code` did.

    Attributes:
        directory: The site directory the wheels were unpacked into (None if there were none).
        wheels: The wheels installed, as ``s3://bucket/key`` locations.
        skipped_jars: Listed jars, which this port cannot run.
    """

    directory: Path | None
    wheels: tuple[str, ...] = ()
    skipped_jars: tuple[str, ...] = ()


def install_user_code(
    properties: InstanceProperties,
    *,
    directory: Path | None = None,
    options: FileSystemOptions | None = None,
) -> InstalledCode:
    """Installs the wheels ``sleeper.userjars`` lists from ``sleeper.jars.bucket``; a no-op when there are none.

    Call it once at start-up, before an iterator is loaded. Installing the same wheel again in a process does nothing.

    Args:
        properties: The instance properties.
        directory: Where to unpack; ``<temporary directory>/sleeper-user-code`` by default.
        options: How to reach S3.

    Raises:
        UserCodeError: If a wheel cannot be read or installed (the process should not run iterators without it).
    """
    jars = tuple(k for k in properties.get_list(USER_JARS) if not k.lower().endswith(".whl"))
    for jar in jars:
        _LOG.warning("sleeper.userjars lists %s: Java code cannot run in this port, only Python wheels", jar)
    locations = user_code_locations(properties)
    if not locations:
        return InstalledCode(directory=None, skipped_jars=jars)
    target = install_wheels(locations, directory=directory, options=options)
    return InstalledCode(directory=target, wheels=tuple(locations), skipped_jars=jars)


def user_code_locations(properties: InstanceProperties) -> list[str]:
    """The ``s3://`` locations of the wheels ``sleeper.userjars`` lists in ``sleeper.jars.bucket``.

    Raises:
        UserCodeError: If wheels are listed and the jars bucket is not set.
    """
    wheels = user_wheel_keys(properties)
    if not wheels:
        return []
    bucket = properties.get(JARS_BUCKET)
    if not bucket:
        raise UserCodeError(f"{USER_JARS.name} lists wheels but {JARS_BUCKET.name} is not set")
    return [f"s3://{bucket}/{key}" for key in wheels]


def install_wheels(
    locations: list[str], *, directory: Path | None = None, options: FileSystemOptions | None = None
) -> Path:
    """Unpacks pure-Python wheels into a directory and adds it as a site directory (its ``.pth`` files apply).

    Args:
        locations: The wheels, as URIs or paths pyarrow can read (``s3://``, ``file://``, local paths).
        directory: Where to unpack; ``<temporary directory>/sleeper-user-code`` by default.
        options: How to reach S3.

    Returns:
        The directory.

    Raises:
        UserCodeError: If a wheel is missing, unreadable, not a pure-Python wheel, or would write outside the
            directory.
    """
    target = directory or Path(tempfile.gettempdir()) / USER_CODE_DIRECTORY
    target.mkdir(parents=True, exist_ok=True)
    for location in locations:
        if _installed.get(location) == target:
            continue
        _unpack(location, target, options)
        _installed[location] = target
        _LOG.info("installed user code %s into %s", location, target)
    site.addsitedir(str(target))
    return target


def _unpack(location: str, target: Path, options: FileSystemOptions | None) -> None:
    filename = PurePosixPath(location).name
    match = _WHEEL.fullmatch(filename.removesuffix(".whl"))
    if not filename.endswith(".whl") or match is None:
        raise UserCodeError(f"{location} is not a wheel (name-version-python-abi-platform.whl)")
    if match["abi"] != "none" or match["platform"] != "any":
        raise UserCodeError(
            f"{location} is built for {match['abi']}-{match['platform']}; only pure-Python wheels (none-any) are "
            "installed at start-up: build a derived image for compiled code"
        )
    try:
        fs, path = resolve(location, options)
        with fs.open_input_file(path) as source:
            data = source.read()
    except (OSError, ValueError, SleeperError) as e:
        raise UserCodeError(f"cannot read user code {location}: {e}") from e
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as wheel:
            for member in wheel.infolist():
                _extract(wheel, member, target, location)
    except zipfile.BadZipFile as e:
        raise UserCodeError(f"{location} is not a valid wheel: {e}") from e


def _extract(wheel: zipfile.ZipFile, member: zipfile.ZipInfo, target: Path, location: str) -> None:
    name = PurePosixPath(member.filename)
    parts = name.parts
    if len(parts) >= 3 and parts[0].endswith(".data"):
        if parts[1] not in ("purelib", "platlib"):
            return  # scripts, headers and data files are not importable code
        name = PurePosixPath(*parts[2:])
    if name.is_absolute() or ".." in name.parts:
        raise UserCodeError(f"{location} holds {member.filename!r}, which would be written outside {target}")
    destination = target.joinpath(*name.parts)
    if member.is_dir():
        destination.mkdir(parents=True, exist_ok=True)
        return
    destination.parent.mkdir(parents=True, exist_ok=True)
    with wheel.open(member) as source:
        destination.write_bytes(source.read())
