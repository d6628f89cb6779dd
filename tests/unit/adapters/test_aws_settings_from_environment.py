"""``AwsSettings.from_environment`` reads the region, profile and endpoint as boto3 and the AWS CLI read them, from
the environment mapping it is given and the shared files that mapping names (nothing here reaches AWS)."""

from __future__ import annotations

from pathlib import Path

import pytest

from sleeper.adapters.aws.clients import AwsConfigurationError, AwsSettings


@pytest.fixture
def files(tmp_path: Path) -> dict[str, str]:
    """An environment naming a shared config file with a default and a named profile, and no credentials file."""
    config = tmp_path / "config"
    config.write_text(
        "[default]\nregion = eu-west-1\n"
        "[profile dev]\nregion = ap-south-1\n"
        "[profile local]\nregion = eu-west-2\nendpoint_url = http://127.0.0.1:4566\n"
    )
    return {"AWS_CONFIG_FILE": str(config), "AWS_SHARED_CREDENTIALS_FILE": str(tmp_path / "credentials")}


def should_prefer_the_region_variables_to_the_profile(files: dict[str, str]) -> None:
    assert AwsSettings.from_environment({**files, "AWS_DEFAULT_REGION": "us-west-2"}).region == "us-west-2"
    both = {**files, "AWS_REGION": "ca-central-1", "AWS_DEFAULT_REGION": "us-west-2"}
    assert AwsSettings.from_environment(both).region == "ca-central-1"


def should_take_the_region_of_the_profile_named_else_the_default(files: dict[str, str]) -> None:
    assert AwsSettings.from_environment(files).region == "eu-west-1"
    assert AwsSettings.from_environment({**files, "AWS_PROFILE": "dev"}).region == "ap-south-1"
    # AWS_DEFAULT_PROFILE is read before AWS_PROFILE, as botocore reads them
    both = {**files, "AWS_DEFAULT_PROFILE": "local", "AWS_PROFILE": "dev"}
    assert AwsSettings.from_environment(both).region == "eu-west-2"


def should_find_a_profile_held_only_by_the_credentials_file(files: dict[str, str]) -> None:
    Path(files["AWS_SHARED_CREDENTIALS_FILE"]).write_text("[ci]\naws_access_key_id = a\naws_secret_access_key = b\n")
    settings = AwsSettings.from_environment({**files, "AWS_PROFILE": "ci", "AWS_REGION": "eu-north-1"})
    assert settings.region == "eu-north-1"


def should_take_the_endpoint_from_the_variable_else_the_profile_unless_told_to_ignore_them(
    files: dict[str, str],
) -> None:
    local = {**files, "AWS_PROFILE": "local"}
    assert AwsSettings.from_environment(local).endpoint_url == "http://127.0.0.1:4566"
    assert AwsSettings.from_environment({**local, "AWS_ENDPOINT_URL": "http://h:1"}).endpoint_url == "http://h:1"
    assert AwsSettings.from_environment(files).endpoint_url is None
    ignoring = {**local, "AWS_ENDPOINT_URL": "http://h:1", "AWS_IGNORE_CONFIGURED_ENDPOINT_URLS": "true"}
    assert AwsSettings.from_environment(ignoring).endpoint_url is None


def should_name_the_profile_explicitly_only_when_the_process_environment_names_another(
    files: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # An explicit profile makes boto3 skip the keys in the environment, so it is named only when needed: when the
    # mapping's profile is not the one the process's own environment gives boto3
    process = {"AWS_PROFILE": "dev"}
    assert AwsSettings.from_environment({**files, "AWS_PROFILE": "dev"}, process_environ=process).profile is None
    assert AwsSettings.from_environment({**files, "AWS_PROFILE": "local"}, process_environ=process).profile == "local"
    assert AwsSettings.from_environment({**files, **process}, process_environ=process).profile is None
    assert (
        AwsSettings.from_environment({**files, "AWS_PROFILE": "local"}).profile is None
    )  # the mapping is the process's


def should_say_how_to_set_a_region_when_none_is_found(tmp_path: Path) -> None:
    env = {"AWS_CONFIG_FILE": str(tmp_path / "absent"), "AWS_SHARED_CREDENTIALS_FILE": str(tmp_path / "absent")}
    with pytest.raises(AwsConfigurationError) as raised:
        AwsSettings.from_environment(env)
    message = str(raised.value)
    for way in ("AWS_REGION", "AWS_DEFAULT_REGION", "default profile", str(tmp_path / "absent"), "AWS_PROFILE"):
        assert way in message, message


def should_say_which_profile_is_missing_and_which_there_are(files: dict[str, str]) -> None:
    with pytest.raises(AwsConfigurationError, match=r"'stage' named by AWS_PROFILE .*default, dev, local"):
        AwsSettings.from_environment({**files, "AWS_PROFILE": "stage", "AWS_REGION": "eu-west-2"})


def should_say_when_a_named_config_file_does_not_exist(tmp_path: Path) -> None:
    env = {"AWS_CONFIG_FILE": str(tmp_path / "absent"), "AWS_PROFILE": "dev"}
    with pytest.raises(AwsConfigurationError, match="does not exist"):
        AwsSettings.from_environment(env)
