"""An instance on AWS is found with the AWS configuration a user already has, read as boto3 and the AWS CLI read it:
the region from the profile (``AWS_PROFILE``, else ``default``) in the shared config file when no variable names
one, the endpoint from the profile's ``endpoint_url``, credentials from the profile's ``credential_process``; in
Python (``sleeper.connect("aws:ID")``) and on the command line (``sleeper -i aws:ID``) alike.

The instance is on this process's moto server, whose DynamoDB keeps each region apart: listing the tables reads the
table index in the instance's region, so it finds them only if the region was resolved right.
"""

from __future__ import annotations

import json
import shlex
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import sleeper
from sleeper.api.instance import Instance
from sleeper.cli.main import run
from sleeper.emulator.provision import provision_instance
from sleeper.runtime.aws.api import AwsApi
from sleeper.runtime.aws.instance import AwsInstance, AwsRuntimeConfigError
from tests.contract.aws_backends import REGION, aws_settings, moto_endpoint, new_instance_id

pytestmark = [pytest.mark.integration, pytest.mark.aws]

OTHER_REGION = "us-east-1"
"""A region where the instance is not: a profile naming it would not find the instance's tables."""
TABLE = "profiled"
_ENVIRONMENT = (
    "AWS_REGION",
    "AWS_DEFAULT_REGION",
    "AWS_PROFILE",
    "AWS_DEFAULT_PROFILE",
    "AWS_ENDPOINT_URL",
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "AWS_IGNORE_CONFIGURED_ENDPOINT_URLS",
    "CONFIG_BUCKET",
    "SLEEPER_INSTANCE_ID",
    "SLEEPER_ACCOUNT",
    "SLEEPER_INSTANCE",
)


@pytest.fixture(scope="module")
def instance_id() -> str:
    """An emulated instance in ``REGION`` holding one table."""
    settings = aws_settings()
    config = provision_instance(settings, new_instance_id())
    api = AwsApi(AwsInstance(config))
    api.create_table(TABLE, sleeper.Schema.of(row_keys=[sleeper.Field("key", sleeper.PrimitiveType.LONG)]))
    return api.instance_id


@pytest.fixture
def config_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """An empty shared config file named by ``AWS_CONFIG_FILE``, with no other AWS variable set but the emulator's
    endpoint and credentials (and no shared credentials file), so only the file can give the region."""
    for name in _ENVIRONMENT:
        monkeypatch.delenv(name, raising=False)
    path = tmp_path / "aws-config"
    path.write_text("")
    monkeypatch.setenv("AWS_CONFIG_FILE", str(path))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-credentials"))
    monkeypatch.setenv("AWS_ENDPOINT_URL", moto_endpoint())
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    yield path


def _profiles(path: Path, profiles: dict[str, dict[str, str]]) -> None:
    """Writes profiles as ``aws configure`` writes them: ``[default]`` and ``[profile NAME]`` sections."""
    lines = []
    for name, values in profiles.items():
        lines.append("[default]" if name == "default" else f"[profile {name}]")
        lines.extend(f"{key} = {value}" for key, value in values.items())
    path.write_text("\n".join(lines) + "\n")


def _table_names(instance: Instance) -> list[str]:
    return [table.table_name for table in instance.tables()]


def _cli_tables(capsys: pytest.CaptureFixture[str], instance_id: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = run(["-i", f"aws:{instance_id}", "table", "list"])
    captured = capsys.readouterr()
    return code, captured.out, " ".join(captured.err.split())


@pytest.mark.parametrize("via", ["AWS_PROFILE", "default profile"])
def should_find_the_instance_in_the_region_of_the_profile(
    via: str, instance_id: str, config_file: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given no region variable, and the instance's region only in a profile of the shared config file: one AWS_PROFILE
    # names (the default profile naming another region), or the default profile
    if via == "AWS_PROFILE":
        _profiles(config_file, {"default": {"region": OTHER_REGION}, "sleeper-dev": {"region": REGION}})
        monkeypatch.setenv("AWS_PROFILE", "sleeper-dev")
    else:
        _profiles(config_file, {"default": {"region": REGION}})
    # When the instance is opened in Python
    instance = sleeper.connect(f"aws:{instance_id}")
    # Then it is found, in that region, with its table
    assert _table_names(instance) == [TABLE]
    # And the command line finds it too
    code, out, err = _cli_tables(capsys, instance_id)
    assert code == 0, err
    assert TABLE in out


def should_let_a_region_variable_win_over_the_profile(
    instance_id: str, config_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a profile naming another region, and AWS_REGION naming the instance's
    _profiles(config_file, {"default": {"region": OTHER_REGION}})
    monkeypatch.setenv("AWS_REGION", REGION)
    # When the instance is opened
    # Then the variable's region is used, as boto3 uses it
    assert _table_names(sleeper.connect(f"aws:{instance_id}")) == [TABLE]


def should_take_credentials_from_a_credential_process(
    instance_id: str, config_file: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given no credentials in the environment, and a profile whose credential_process prints the emulator's
    monkeypatch.delenv("AWS_ACCESS_KEY_ID")
    monkeypatch.delenv("AWS_SECRET_ACCESS_KEY")
    printed = json.dumps({"Version": 1, "AccessKeyId": "testing", "SecretAccessKey": "testing"})
    process = f"{shlex.quote(sys.executable)} -c {shlex.quote(f'print({printed!r})')}"
    _profiles(config_file, {"sso-like": {"region": REGION, "credential_process": process}})
    monkeypatch.setenv("AWS_PROFILE", "sso-like")
    # When the instance is opened, in Python and on the command line
    # Then boto3's chain ran the process for the credentials, and the instance is found
    assert _table_names(sleeper.connect(f"aws:{instance_id}")) == [TABLE]
    code, out, err = _cli_tables(capsys, instance_id)
    assert code == 0, err
    assert TABLE in out


def should_take_the_emulator_endpoint_from_the_profile(
    instance_id: str, config_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given no AWS_ENDPOINT_URL, and a profile naming the emulator as its endpoint_url (as a LocalStack profile does)
    monkeypatch.delenv("AWS_ENDPOINT_URL")
    _profiles(config_file, {"emulator": {"region": REGION, "endpoint_url": moto_endpoint()}})
    monkeypatch.setenv("AWS_PROFILE", "emulator")
    # When the instance is opened
    instance = sleeper.connect(f"aws:{instance_id}")
    # Then every client reaches the emulator, pyarrow's included
    assert _table_names(instance) == [TABLE]
    assert isinstance(instance, AwsApi)
    assert instance.runtime.filesystem_options.s3.endpoint_override == moto_endpoint()


def should_name_every_way_to_set_a_region_when_none_is_configured(
    instance_id: str, config_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given no region variable and a shared config file whose default profile has no region
    _profiles(config_file, {"default": {"output": "json"}})
    # When the instance is opened in Python
    with pytest.raises(AwsRuntimeConfigError) as raised:
        sleeper.connect(f"aws:{instance_id}")
    # Then the error names the variables, the file and the profile
    message = str(raised.value)
    ways = ("AWS_REGION", "AWS_DEFAULT_REGION", str(config_file), "default profile", "AWS_PROFILE", "aws configure")
    assert all(way in message for way in ways), message
    # And the command line says the same, without a traceback
    code, out, err = _cli_tables(capsys, instance_id)
    assert code != 0 and out == ""
    assert "AWS_DEFAULT_REGION" in err and "Traceback" not in err


def should_say_when_the_profile_named_does_not_exist(
    instance_id: str, config_file: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given AWS_PROFILE naming a profile the shared config file lacks (and AWS_REGION set, so the region is no issue)
    _profiles(config_file, {"default": {"region": REGION}, "prod": {"region": REGION}})
    monkeypatch.setenv("AWS_PROFILE", "prdo")
    monkeypatch.setenv("AWS_REGION", REGION)
    # When the instance is opened
    with pytest.raises(AwsRuntimeConfigError, match=r"'prdo' named by AWS_PROFILE.*profiles there: default, prod"):
        sleeper.connect(f"aws:{instance_id}")
    # Then the command line reports it as a mistake, not a crash
    code, _, err = _cli_tables(capsys, instance_id)
    assert code != 0
    assert "prdo" in err and "Traceback" not in err


def should_say_when_the_shared_config_file_cannot_be_read(
    instance_id: str, config_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a shared config file that is not an INI file
    config_file.write_text("[default\nregion = eu-west-2\n")
    # When the instance is opened
    # Then the error names the file
    with pytest.raises(AwsRuntimeConfigError, match="cannot read the AWS shared configuration.*aws-config"):
        sleeper.connect(f"aws:{instance_id}")
