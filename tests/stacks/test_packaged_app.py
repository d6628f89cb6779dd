"""The CDK app from an installed wheel: the package is built into a wheel, installed into a fresh virtual environment
outside the checkout, and from there ``sleeper deploy --dry-run`` prints the plan with the packaged app, the app
synthesizes as the ``cdk`` command runs it, and a user's own CDK app synthesizes a ``SleeperInstance``.

The wheel is built by the project's build backend (``pip wheel``, which fetches setuptools into an isolated build
environment as ``pip install -e .`` does). It is installed with ``--no-deps`` into a venv that sees this venv's
packages through a ``.pth`` line (the ``cdk`` extra's aws-cdk-lib and the rest): this machine's pip cache holds none of
the locked wheels, so ``pip install '<wheel>[cdk]' -c constraints.txt`` cannot run offline. The venv's own
``sleeper`` is the wheel's (checked), never the checkout's.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

pytest.importorskip("aws_cdk")

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.slow

SOURCES = ("pyproject.toml", "README.md", "LICENSE", "NOTICE", "sleeper")


@dataclass(frozen=True)
class Installed:
    """A virtual environment with the wheel installed, and a directory outside the checkout to run in."""

    venv: Path
    work: Path
    wheel: Path

    @property
    def python(self) -> Path:
        return self.venv / "bin" / "python"

    def run(self, *argv: str | Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        clean = {k: v for k, v in os.environ.items() if not k.startswith(("CDK_", "AWS_", "PYTHON", "VIRTUAL_ENV"))}
        clean["PATH"] = f"{self.venv / 'bin'}{os.pathsep}{clean.get('PATH', '')}"
        return subprocess.run([str(a) for a in argv], cwd=self.work, env={**clean, **(env or {})},
                              capture_output=True, text=True, timeout=600, check=False)  # fmt: skip


def _build_wheel(tmp: Path) -> Path:
    source = tmp / "source"
    source.mkdir()
    for name in SOURCES:
        path = ROOT / name
        if path.is_dir():
            shutil.copytree(path, source / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            shutil.copy2(path, source / name)
    dist = tmp / "dist"
    result = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(dist), str(source)],
        capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    if result.returncode != 0:
        offline = any(s in result.stderr for s in ("NewConnectionError", "No matching distribution", "Could not find"))
        if offline:
            pytest.skip("building the wheel needs setuptools>=77 from the package index, which cannot be reached")
        raise AssertionError(result.stderr)
    (wheel,) = dist.glob("sleeper_lsm-*.whl")
    return wheel


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Installed]:
    tmp = tmp_path_factory.mktemp("wheel")
    wheel = _build_wheel(tmp)
    venv = tmp / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    site = Path(
        subprocess.run(
            [str(venv / "bin" / "python"), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            capture_output=True, text=True, check=True,
        ).stdout.strip()
    )  # fmt: skip
    # This venv's packages after the new venv's own (a plain path line: the checkout's editable finder is not loaded)
    (site / "dev_packages.pth").write_text(sysconfig.get_paths()["purelib"] + "\n", encoding="utf-8")
    subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "--no-deps", "--no-index", str(wheel)],
                   check=True, timeout=300)  # fmt: skip
    work = tmp / "work"
    work.mkdir()
    yield Installed(venv=venv, work=work, wheel=wheel)


def _configuration(directory: Path) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "instance.properties").write_text(
        "sleeper.id=wheeled\nsleeper.optional.stacks=QueryStack\n", encoding="utf-8"
    )
    table = directory / "tables" / "numbers"
    table.mkdir(parents=True)
    (table / "table.properties").write_text("sleeper.table.name=numbers\n", encoding="utf-8")
    (table / "schema.json").write_text(
        json.dumps({"rowKeyFields": [{"name": "key", "type": "LongType"}], "valueFields": []}), encoding="utf-8"
    )
    return directory


def should_hold_the_licence_files_and_no_package_but_sleeper(installed: Installed) -> None:
    # Given the wheel built from the checkout
    # When its entries are listed
    with zipfile.ZipFile(installed.wheel) as wheel:
        names = wheel.namelist()
    # Then its only top-level package is sleeper (the Lambda handlers and the CDK app inside it), and the licence
    # files are in its metadata
    assert {name.split("/")[0] for name in names if not name.split("/")[0].endswith(".dist-info")} == {"sleeper"}
    assert any(name.startswith("sleeper/lambdas/") for name in names)
    assert any(name.startswith("sleeper/cdk/") for name in names)
    licences = {name.rsplit("/", 1)[-1] for name in names if "/licenses/" in name}
    assert licences == {"LICENSE", "NOTICE"}


def should_import_the_package_and_the_app_from_the_wheel(installed: Installed) -> None:
    # When the venv's Python says where the package and the app come from
    result = installed.run(
        installed.python, "-c",
        "import sleeper, sleeper.cdk.app as app; print(sleeper.__file__); print(app.__file__); print(app.ROOT)",
    )  # fmt: skip
    # Then both are the installed wheel's, in the venv, not the checkout's
    assert result.returncode == 0, result.stderr
    package, app, root = result.stdout.split()
    assert Path(package).is_relative_to(installed.venv) and Path(app).is_relative_to(installed.venv)
    assert not Path(package).is_relative_to(ROOT)
    assert not (Path(root) / "containers").exists()


def should_print_the_deploy_plan_with_the_packaged_app(installed: Installed) -> None:
    # Given a configuration outside any checkout
    config = _configuration(installed.work / "dry-run")
    # When sleeper deploy --dry-run runs from the installed package
    result = installed.run(installed.venv / "bin" / "sleeper", "deploy", str(config), "--dry-run")
    # Then it prints the plan and the cdk command running the packaged app with the venv's Python, from the current
    # directory (there is no checkout to run in)
    assert result.returncode == 0, result.stderr
    assert "Deploying instance wheeled" in result.stdout
    assert "  Query: " in result.stdout and "table numbers" in result.stdout
    assert f"$ cdk deploy --app '{installed.python} -m sleeper.cdk.app' -c configurationDir=" in result.stdout
    assert "deploy from a checkout" not in result.stdout + result.stderr


def should_synthesize_as_cdk_runs_the_packaged_app(installed: Installed) -> None:
    # Given a configuration, and the context and output directory as the cdk command gives them
    config = _configuration(installed.work / "app")
    outdir = installed.work / "cdk.out"
    context = {"configurationDir": str(config)}
    # When the installed app runs as cdk deploy --app '<python> -m sleeper.cdk.app' runs it
    result = installed.run(
        installed.python, "-m", "sleeper.cdk.app",
        env={"CDK_CONTEXT_JSON": json.dumps(context), "CDK_OUTDIR": str(outdir)},
    )  # fmt: skip
    # Then the instance is synthesized, its images from ECR (an installed package has no Dockerfiles to build)
    assert result.returncode == 0, result.stderr
    template = json.loads((outdir / "wheeled.template.json").read_text(encoding="utf-8"))
    assert template["Description"] == "Sleeper instance wheeled"
    assets = json.loads((outdir / "wheeled.assets.json").read_text(encoding="utf-8"))
    assert not assets.get("dockerImages")
    nested = [json.loads(p.read_text(encoding="utf-8")) for p in outdir.glob("wheeledQuery*.nested.template.json")]
    functions = [r for t in nested for r in t["Resources"].values() if r["Type"] == "AWS::Lambda::Function"]
    assert functions and all("ecr" in json.dumps(f["Properties"]["Code"]["ImageUri"]) for f in functions)


def should_synthesize_a_sleeper_instance_in_a_users_own_app(installed: Installed) -> None:
    # Given a CDK app of the user's own, adding a SleeperInstance beside a stack of theirs
    config = _configuration(installed.work / "construct")
    script = installed.work / "my_app.py"
    script.write_text(
        "import aws_cdk as cdk\n"
        "from sleeper.cdk import SleeperInstance\n"
        "app = cdk.App(outdir='my.out')\n"
        "cdk.Stack(app, 'Mine')\n"
        f"SleeperInstance(app, 'MySleeper', {str(config)!r}, tags={{'team': 'data'}})\n"
        "app.synth()\n",
        encoding="utf-8",
    )
    # When it is synthesized with the venv's Python
    result = installed.run(installed.python, script)
    # Then the instance is a stack of that app, named after the instance id and tagged
    assert result.returncode == 0, result.stderr
    manifest = json.loads((installed.work / "my.out" / "manifest.json").read_text(encoding="utf-8"))
    stacks = {name: a for name, a in manifest["artifacts"].items() if a["type"] == "aws:cloudformation:stack"}
    assert set(stacks) == {"Mine", "MySleeper"}
    assert stacks["MySleeper"]["properties"]["stackName"] == "wheeled"
    assert stacks["MySleeper"]["properties"]["tags"]["team"] == "data"


def should_import_the_package_and_refuse_to_deploy_without_the_cdk_extra(tmp_path: Path) -> None:
    # Given a Python in which aws-cdk-lib and constructs cannot be imported
    config = _configuration(tmp_path / "config")
    code = (
        "import sys\n"
        "sys.modules['aws_cdk'] = sys.modules['constructs'] = None\n"
        "import sleeper, sleeper.cli.deploy\n"
        "from sleeper.cli.main import run\n"
        f"raise SystemExit(run(['deploy', {str(config)!r}]))\n"
    )
    # When the package is imported and sleeper deploy runs
    result = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=300,
                            check=False)  # fmt: skip
    # Then the import works and the deploy is refused in one line naming the extra
    assert result.returncode != 0
    assert "Traceback" not in result.stderr
    (line,) = result.stderr.strip().splitlines()
    assert "needs the cdk extra" in line and "pip install 'sleeper-lsm[cdk]'" in line


def should_refuse_a_configuration_that_is_not_there_or_an_unknown_artefacts_mode(tmp_path: Path) -> None:
    # Given an app, a path holding nothing and a configuration
    import aws_cdk as cdk

    from sleeper.cdk import SleeperInstance
    from sleeper.core.deploy.configuration import ConfigurationError

    config = _configuration(tmp_path / "config")
    # When / Then a SleeperInstance of a missing path is refused naming it, before anything is built
    with pytest.raises(ConfigurationError, match="missing: no such configuration"):
        SleeperInstance(cdk.App(), "Missing", tmp_path / "missing")
    # And an artefacts mode other than asset or ecr is refused naming both
    with pytest.raises(ValueError, match="artefacts must be 'asset' or 'ecr', not 'docker'"):
        SleeperInstance(cdk.App(), "Wrong", config, artefacts="docker")
