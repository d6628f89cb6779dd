"""The CDK app's context: Sleeper 0.36.1's names, the older ones, and an unknown name refused naming it."""

from __future__ import annotations

import pytest

from sleeper.core.deploy.context import CONTEXT_KEYS, DeployContextError, read_context


def should_read_sleeper_0_36_names() -> None:
    # When
    options = read_context({"propertiesFile": "a/instance.properties", "deployPaused": "true", "vpc": "vpc-1"})

    # Then
    assert options.get("propertiesFile") == "a/instance.properties"
    assert options.flag("deployPaused") is True
    assert options.get("vpc") == "vpc-1"
    assert options.flag("validate", default=True) is True


@pytest.mark.parametrize("old", ["propertiesfile", "instanceproperties", "instanceProperties"])
def should_still_accept_the_older_names_of_the_properties_file(old: str) -> None:
    # When / Then
    assert read_context({old: "x.properties"}).get("propertiesFile") == "x.properties"


def should_refuse_an_unknown_context_name_naming_it() -> None:
    # When / Then
    with pytest.raises(DeployContextError, match="'propertiesFiel'"):
        read_context({"propertiesFiel": "instance.properties"})


def should_leave_the_cdks_own_context_alone() -> None:
    # Given what the CDK keeps in the context besides ours
    context = {
        "@aws-cdk/aws-s3:serverAccessLogsUseBucketPolicy": True,
        "aws:cdk:enable-path-metadata": True,
        "vpc-provider:account=1:filter.vpc-id=vpc-1:region=eu-west-2": {},
        "acknowledged-issue-numbers": [12345],
        "configurationDir": "conf",
    }

    # When
    options = read_context(context)

    # Then
    assert dict(options.values) == {"configurationDir": "conf"}


def should_refuse_both_a_properties_file_and_a_configuration_directory() -> None:
    # When / Then
    with pytest.raises(DeployContextError, match="exactly one"):
        read_context({"propertiesfile": "a", "configurationDir": "b"})


def should_refuse_one_setting_given_twice_with_different_values() -> None:
    # When / Then
    with pytest.raises(DeployContextError, match="'propertiesFile' and 'propertiesfile'"):
        read_context({"propertiesFile": "a", "propertiesfile": "b"})


def should_refuse_a_flag_that_is_not_true_or_false() -> None:
    # When / Then
    with pytest.raises(DeployContextError, match="'newInstance' must be true or false"):
        read_context({"newInstance": "yes"})


def should_describe_every_name() -> None:
    # Then
    assert all(len(description) > 20 for description in CONTEXT_KEYS.values())
    assert {"propertiesFile", "configurationDir", "id", "artefactsId", "vpc", "subnets", "validate", "newInstance",
            "skipVersionCheck", "deployPaused"} <= set(CONTEXT_KEYS)  # fmt: skip
