"""The instance a handler works on (``sleeper.lambdas._common.aws_instance``): the one its environment names, reused
by warm invocations, as a deployed Lambda finds it; or one given through ``use_instance``."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

import sleeper.lambdas._common
from sleeper.lambdas._common import aws_instance, use_instance
from sleeper.runtime.aws.instance import AwsInstance, AwsRuntimeConfig


@pytest.fixture(autouse=True)
def installed(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """Records the instances whose user code was installed (installing reads the instance properties from S3, which
    these tests do not provide)."""
    calls: list[object] = []
    monkeypatch.setattr(sleeper.lambdas._common, "install_user_code", lambda properties, **_: calls.append(properties))
    monkeypatch.setattr(AwsInstance, "properties", property(lambda self: self.config.config_bucket))
    return calls


@pytest.fixture(autouse=True)
def _environment(monkeypatch: pytest.MonkeyPatch, installed: list[object]) -> Iterator[None]:
    for name in ("CONFIG_BUCKET", "SLEEPER_INSTANCE_ID", "SLEEPER_ACCOUNT", "AWS_DEFAULT_REGION"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_REGION", "eu-west-2")
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9")
    use_instance(None)
    yield
    use_instance(None)


def should_reuse_the_instance_while_the_environment_names_it(
    monkeypatch: pytest.MonkeyPatch, installed: list[object]
) -> None:
    # Given an environment naming an instance's config bucket
    monkeypatch.setenv("CONFIG_BUCKET", "sleeper-a-config-1")
    # When two invocations find their instance
    first, second = aws_instance(), aws_instance()
    # Then it is the one built by the first, as warm Lambda invocations reuse it, and its user code was installed once
    assert first is second
    assert installed == ["sleeper-a-config-1"]
    assert first.config.config_bucket == "sleeper-a-config-1"
    assert first.config.settings.endpoint_url == "http://127.0.0.1:9"


def should_find_the_instance_the_environment_names_now(monkeypatch: pytest.MonkeyPatch) -> None:
    # Given a handler that found one instance from its environment
    monkeypatch.setenv("CONFIG_BUCKET", "sleeper-a-config-1")
    first = aws_instance()
    # When the environment names another (an emulator running the handlers of two instances in one process)
    monkeypatch.setenv("CONFIG_BUCKET", "sleeper-b-config-1")
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:10")
    second = aws_instance()
    # Then the handler works on the other
    assert second.config.config_bucket == "sleeper-b-config-1"
    assert second.config.settings.endpoint_url == "http://127.0.0.1:10"
    assert first.config.config_bucket == "sleeper-a-config-1"


def should_use_a_given_instance_whatever_the_environment_names(monkeypatch: pytest.MonkeyPatch) -> None:
    # Given an instance given to the handlers, and an environment naming another
    monkeypatch.setenv("CONFIG_BUCKET", "sleeper-a-config-1")
    given = AwsInstance(AwsRuntimeConfig.from_environment({"CONFIG_BUCKET": "given", "AWS_REGION": "eu-west-1"}))
    use_instance(given)
    # When a handler finds its instance, and again after the given one is withdrawn
    found = aws_instance()
    use_instance(None)
    after = aws_instance()
    # Then it is the given one, and then the environment's
    assert found is given
    assert after.config.config_bucket == "sleeper-a-config-1"
