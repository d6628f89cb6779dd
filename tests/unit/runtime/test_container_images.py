"""The images, read from their Dockerfiles (no image is built here): every image starts its processes with the
environment they share, and the bulk import images run one Spark: the Python side's PySpark is the base image's
Spark, the `spark-submit` the image runs is that Spark's, and the EKS image (Apache Spark's image, which has no S3
connector) carries the S3A connector of the Hadoop version its Spark is built against."""

from __future__ import annotations

import re
import shlex
import tomllib
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pytest

from sleeper.core import IMAGE_ENVIRONMENT, operations
from sleeper.core.properties import InstanceProperties
from sleeper.core.properties.spark import eks_spark_conf

ROOT = Path(__file__).resolve().parents[3]
EKS = "bulk-import-eks"
EMR_SERVERLESS = "bulk-import"

EMR_RELEASE_SPARK = {"emr-7.2.0": "3.5.1"}
"""The Spark of each EMR release a Dockerfile is based on (Amazon EMR's Spark release history: emr-7.2.0 has Spark
3.5.1-amzn-0). A new release goes here when a Dockerfile moves to it."""
SPARK_HADOOP = {"3.5.6": "3.3.4"}
"""The Hadoop each Spark release is built against (``hadoop.version`` in Spark's pom.xml: the
``hadoop-client-api-<version>.jar`` of its distribution, as in the pyspark 3.5.6 wheel)."""
HADOOP_AWS_SDK_BUNDLE = {"3.3.4": "1.12.262"}
"""The ``com.amazonaws:aws-java-sdk-bundle`` each hadoop-aws release depends on (``aws-java-sdk.version`` in
Hadoop's hadoop-project pom). Hadoop 3.3 uses the AWS SDK for Java v1; from 3.4 it uses v2
(``software.amazon.awssdk``)."""
_SYSTEM_PATH = ["/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin"]
BASE_PATH = {"apache/spark": ["/opt/java/openjdk/bin", *_SYSTEM_PATH], "public.ecr.aws/emr-serverless": _SYSTEM_PATH}
"""The PATH each base image starts with (what ``$PATH`` stands for in an ``ENV PATH``)."""
SPARK_HOME = {"apache/spark": "/opt/spark", "public.ecr.aws/emr-serverless": "/usr/lib/spark"}


@dataclass(frozen=True)
class Dockerfile:
    """The parts of a Dockerfile these checks read, with ``ARG`` defaults substituted into ``RUN`` and ``ENV``."""

    name: str
    base: str
    args: dict[str, str]
    env: dict[str, str]
    runs: tuple[str, ...]

    @property
    def base_family(self) -> str:
        return next(family for family in SPARK_HOME if self.base.startswith(family))

    @property
    def spark_home(self) -> str:
        return SPARK_HOME[self.base_family]


def _instructions(text: str) -> list[tuple[str, str]]:
    lines = [line for line in text.splitlines() if not line.lstrip().startswith("#")]
    joined = re.sub(r"\\\n", " ", "\n".join(lines))
    found = []
    for line in joined.splitlines():
        if line.strip():
            keyword, _, rest = line.strip().partition(" ")
            found.append((keyword.upper(), rest.strip()))
    return found


def _substitute(text: str, args: dict[str, str]) -> str:
    return re.sub(r"\$\{(\w+)\}|\$(\w+)", lambda m: args.get(m[1] or m[2], m[0]), text)


@cache
def read(name: str) -> Dockerfile:
    base = ""
    args: dict[str, str] = {}
    env: dict[str, str] = {}
    runs: list[str] = []
    for keyword, rest in _instructions((ROOT / "containers" / name / "Dockerfile").read_text()):
        if keyword == "FROM":
            base = rest.split()[0]
        elif keyword == "ARG":
            key, _, value = rest.partition("=")
            args[key] = value
        elif keyword == "ENV":
            for item in shlex.split(rest):
                key, _, value = item.partition("=")
                env[key] = _substitute(value, args)
        elif keyword == "RUN":
            runs.append(_substitute(rest, args))
    return Dockerfile(name, base, args, env, tuple(runs))


def _commands(run: str) -> list[list[str]]:
    """The simple commands of a ``RUN`` (split at ``&&``, ``||``, ``;`` and ``|`` outside quotes), as words."""
    lexer = shlex.shlex(run, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    commands: list[list[str]] = [[]]
    for token in lexer:
        if token in ("&&", "||", ";", "|"):
            commands.append([])
        else:
            commands[-1].append(token)
    return [c for c in commands if c]


def _pip_installs(dockerfile: Dockerfile) -> list[tuple[str, list[str]]]:
    """Each ``pip install`` of the Dockerfile: the pip it runs and the requirements it names (after the options)."""
    installs = []
    for run in dockerfile.runs:
        for words in _commands(run):
            if "pip" not in " ".join(words[:4]) or "install" not in words:
                continue
            requirements, skip = [], False
            for word in words[words.index("install") + 1 :]:
                if skip:
                    skip = False
                elif word in ("-c", "-r", "--constraint", "--requirement", "--target", "--prefix"):
                    skip = True
                elif not word.startswith("-"):
                    requirements.append(word)
            installs.append((words[0], requirements))
    return installs


@cache
def _extras() -> dict[str, list[str]]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras: dict[str, list[str]] = project["optional-dependencies"]
    return extras


def _expand(requirement: str) -> list[str]:
    """A requirement, or the requirements of this package's extras a local path (``/opt/...[aws,spark]``) names."""
    local = re.fullmatch(r"/[^\[]*(?:\[([^\]]*)\])?", requirement)
    if local is None:
        return [requirement]
    names = [e.strip() for e in (local[1] or "").split(",") if e.strip()]
    return [r for name in names for r in _extras()[name]]


def _name(requirement: str) -> str:
    return re.split(r"[\s<>=!~\[;]", requirement, maxsplit=1)[0].lower()


def _requirements(dockerfile: Dockerfile) -> list[str]:
    return [r for _, requirements in _pip_installs(dockerfile) for req in requirements for r in _expand(req)]


def _base_spark_version(base: str) -> str:
    apache = re.fullmatch(r"apache/spark:(\d+\.\d+\.\d+)-.*", base)
    if apache:
        return apache[1]
    emr = re.fullmatch(r"public\.ecr\.aws/emr-serverless/spark/(emr-[\d.]+):.*", base)
    if emr and emr[1] in EMR_RELEASE_SPARK:
        return EMR_RELEASE_SPARK[emr[1]]
    pytest.fail(f"the Spark version of base image {base} is not known: add its release to EMR_RELEASE_SPARK")


@pytest.mark.parametrize("name", [EKS, EMR_SERVERLESS])
def should_run_the_python_side_on_the_pyspark_of_the_base_images_spark(name: str) -> None:
    # Given a bulk import image's Dockerfile and the Spark of its base image
    dockerfile = read(name)
    spark = _base_spark_version(dockerfile.base)
    # When the PySpark its Python side imports is found: from pip, or the base image's own
    from_pip = [r for r in _requirements(dockerfile) if _name(r) == "pyspark"]
    # Then it is that same Spark
    if from_pip:
        assert all(re.fullmatch(rf"pyspark\s*==\s*{re.escape(spark)}", r) for r in from_pip), (
            f"{name} pip-installs {from_pip}, but its base image {dockerfile.base} runs Spark {spark}"
        )
    else:
        build = "\n".join(dockerfile.runs)
        lib = f"{dockerfile.spark_home}/python/lib"
        assert f"{lib}/pyspark.zip" in build and f"{lib}/py4j-" in build, f"{name} puts no PySpark on Python's path"
        assert dockerfile.args.get("SPARK_VERSION") == spark, f"{name} checks PySpark against another Spark"
        assert "pyspark.__version__" in build, f"{name} does not check the image's PySpark version when it is built"


@pytest.mark.parametrize("name", [EKS, EMR_SERVERLESS])
def should_install_what_the_spark_extra_needs_beside_pyspark(name: str) -> None:
    # Given what the package's `spark` extra requires besides PySpark
    needed = {r.replace(" ", "") for r in _extras()["spark"] if _name(r) != "pyspark"}
    # When the image's pip installs are read
    installed = {r.replace(" ", "") for r in _requirements(read(name))}
    # Then the image installs them too
    assert needed <= installed, f"{name} does not install {sorted(needed - installed)}"


@pytest.mark.parametrize("name", [EKS, EMR_SERVERLESS])
def should_find_the_images_own_spark_submit_first_on_path(name: str) -> None:
    # Given a bulk import image's PATH (its base image's, as the Dockerfile's ENV changes it)
    dockerfile = read(name)
    base_path = BASE_PATH[dockerfile.base_family]
    parts = dockerfile.env.get("PATH", "$PATH").split(":")
    path = [d for part in parts for d in (base_path if part == "$PATH" else [part])]
    # When pip puts a PySpark's spark-submit beside the pip that installed it (a venv's bin, or /usr/local/bin)
    pip_dirs = {
        str(Path(pip).parent) if pip.startswith("/") else "/usr/local/bin"
        for pip, requirements in _pip_installs(dockerfile)
        if any(_name(r) == "pyspark" for req in requirements for r in _expand(req))
    }
    # Then the first spark-submit on PATH is the image's Spark's, not PyPI's
    first = next((d for d in path if d in pip_dirs or d == f"{dockerfile.spark_home}/bin"), None)
    assert first is None or first not in pip_dirs, f"{name}: PATH finds PyPI's spark-submit in {first} first"
    if name == EKS:  # the state machine's Kubernetes job runs `spark-submit` in this image
        assert first == f"{dockerfile.spark_home}/bin", f"{name}: no {dockerfile.spark_home}/bin on PATH"


def should_start_the_images_spark_submit_from_the_eks_entry_point() -> None:
    # Given the EKS image's entry point, which runs the Kubernetes job's `spark-submit`
    script = (ROOT / "containers" / EKS / "sleeper-entrypoint.sh").read_text()
    # When the command it hands to Spark's entry point is read
    commands = re.findall(r"exec /opt/entrypoint.sh (\S+)", script)
    # Then it is the image's Spark's spark-submit, found by path
    assert '"${SPARK_HOME}/bin/spark-submit"' in commands, commands


def should_put_hadoop_aws_of_sparks_hadoop_on_the_eks_images_classpath() -> None:
    # Given the EKS image, based on Apache Spark's image (no S3A connector), and the Hadoop its Spark is built on
    dockerfile = read(EKS)
    hadoop = SPARK_HADOOP[_base_spark_version(dockerfile.base)]
    # When its build steps are read
    build = "\n".join(dockerfile.runs)
    # Then it downloads hadoop-aws of that Hadoop and the AWS SDK bundle that release depends on into Spark's jars,
    # each checked against its published checksum, and checks Spark's own Hadoop jars are that version
    hadoop_aws = f"org/apache/hadoop/hadoop-aws/{hadoop}/hadoop-aws-{hadoop}.jar"
    sdk = HADOOP_AWS_SDK_BUNDLE[hadoop]
    bundle = f"com/amazonaws/aws-java-sdk-bundle/{sdk}/aws-java-sdk-bundle-{sdk}.jar"
    step = next((run for run in dockerfile.runs if hadoop_aws in run), None)
    assert step is not None, f"{EKS} adds no hadoop-aws {hadoop} (Spark's Hadoop): s3a:// paths cannot be read"
    assert bundle in step, f"{EKS} adds hadoop-aws {hadoop} without aws-java-sdk-bundle {sdk}"
    assert f"{dockerfile.spark_home}/jars" in step and re.search(r"sha(1|256)sum -c", step), step
    assert f"hadoop-client-api-{hadoop}.jar" in step, "the build does not check Spark's own Hadoop version"
    assert len(re.findall(r"hadoop-aws/", build)) == 1


def should_add_no_s3a_connector_to_the_emr_image() -> None:
    # Given the EMR Serverless image, whose Spark reads s3a:// and s3:// paths with EMR's own S3 connector
    build = "\n".join(read(EMR_SERVERLESS).runs)
    # Then no second connector is put beside it
    assert "hadoop-aws" not in build and "aws-java-sdk-bundle" not in build


def should_name_an_s3a_credentials_provider_of_the_sdk_the_eks_images_hadoop_aws_uses() -> None:
    # Given the Hadoop of the EKS image's Spark, and so the AWS SDK its hadoop-aws takes credential providers from
    hadoop = SPARK_HADOOP[_base_spark_version(read(EKS).base)]
    sdk_package = "com.amazonaws." if hadoop.startswith("3.3.") else "software.amazon.awssdk."
    # When the Spark settings of an EKS job are made
    provider = eks_spark_conf(InstanceProperties()).get("spark.hadoop.fs.s3a.aws.credentials.provider", "")
    # Then the S3A credentials provider is a class of that SDK
    assert provider.startswith(sdk_package), provider


@pytest.mark.parametrize("image", [container.name for container in operations.CONTAINERS])
def should_start_every_image_with_the_image_environment(image: str) -> None:
    # Given an image's Dockerfile
    environment = read(image).env
    # Then its processes start with the environment every image shares (Arrow's memory pool among it)
    assert {key: environment.get(key) for key in IMAGE_ENVIRONMENT} == IMAGE_ENVIRONMENT
