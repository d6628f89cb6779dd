"""Where the AWS runtime finds its instance: the environment variables Sleeper's Lambdas and containers get."""

from __future__ import annotations

import pytest

from sleeper.adapters.aws.clients import AwsSettings
from sleeper.io.filesystem import S3Options
from sleeper.runtime.aws.instance import AwsInstance, AwsRuntimeConfig, AwsRuntimeConfigError


def should_read_the_config_bucket_region_and_endpoint_from_the_environment() -> None:
    # Given the variables a Lambda gets, with an emulator endpoint
    env = {"CONFIG_BUCKET": "sleeper-x-config-1", "AWS_REGION": "eu-west-2", "AWS_ENDPOINT_URL": "http://127.0.0.1:9"}
    # When the configuration is read
    config = AwsRuntimeConfig.from_environment(env)
    # Then it names the bucket, and both boto3 and pyarrow get the region and the endpoint
    assert config.config_bucket == "sleeper-x-config-1"
    assert (config.settings.region, config.settings.endpoint_url) == ("eu-west-2", "http://127.0.0.1:9")
    s3 = config.filesystem_options.s3
    assert (s3.region, s3.endpoint_override) == ("eu-west-2", "http://127.0.0.1:9")


def should_derive_the_config_bucket_from_the_instance_id_and_account() -> None:
    # Given no config bucket but the instance id and account, and the region in AWS_DEFAULT_REGION
    env = {"SLEEPER_INSTANCE_ID": "My.Instance", "SLEEPER_ACCOUNT": "123456789012", "AWS_DEFAULT_REGION": "us-east-1"}
    # When the configuration is read
    config = AwsRuntimeConfig.from_environment(env)
    # Then the bucket is named as Sleeper's client names it, and there is no emulator endpoint
    assert config.config_bucket == "sleeper-my-instance-config-123456789012"
    assert config.settings.endpoint_url is None
    assert config.filesystem_options.s3.endpoint_override is None


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"CONFIG_BUCKET": "b"}, "region"),
        ({"AWS_REGION": "eu-west-2"}, "CONFIG_BUCKET"),
        ({"AWS_REGION": "eu-west-2", "SLEEPER_INSTANCE_ID": "x"}, "SLEEPER_ACCOUNT"),
    ],
)
def should_say_what_is_missing_from_the_environment(env: dict[str, str], message: str) -> None:
    # Given an environment lacking something
    # When an instance is built from it
    # Then the error names what to set
    with pytest.raises(AwsRuntimeConfigError, match=message):
        AwsInstance.from_environment(env)


def should_read_nothing_until_first_used() -> None:
    # Given an instance on an endpoint where nothing listens
    config = AwsRuntimeConfig.from_environment(
        {"CONFIG_BUCKET": "b", "AWS_REGION": "eu-west-2", "AWS_ENDPOINT_URL": "http://127.0.0.1:9"}
    )
    # When it is built
    instance = AwsInstance(config)
    # Then nothing was loaded yet
    assert "properties" not in instance.__dict__


def should_keep_secrets_out_of_the_reprs_of_the_settings() -> None:
    # Given settings with explicit credentials, and the pyarrow options made from them
    secret, token = "wJalrXUtnFEMI-not-a-real-secret", "FwoGZXIvYXdzEXAMPLETOKEN"
    settings = AwsSettings("eu-west-2", "http://127.0.0.1:9", access_key_id="AKIDEXAMPLE", secret_access_key=secret)
    config = AwsRuntimeConfig(config_bucket="sleeper-x-config", settings=settings)
    options = S3Options(region="eu-west-2", access_key="AKIDEXAMPLE", secret_key=secret, session_token=token)
    # When they are shown, as a log line or an error report would show them
    shown = " ".join([repr(settings), str(settings), repr(config), repr(config.filesystem_options), repr(options)])
    # Then neither the secret key nor the session token appears, while the rest still does
    assert secret not in shown and token not in shown
    assert "eu-west-2" in repr(settings) and "AKIDEXAMPLE" in repr(settings)
    # And the settings still hold the secret
    assert settings.secret_access_key == secret
