"""Properties the port does not use, and those only a deployment applies: the definitions say so, the docs show it,
an edit warns, and a property whose omission would weaken security is refused."""

from __future__ import annotations

import inspect

import pytest

from sleeper.core.exceptions import PropertyError
from sleeper.core.properties import INSTANCE_PROPERTY_INDEX, TABLE_PROPERTY_INDEX, InstanceProperties
from sleeper.core.properties.definitions import InstancePropertyGroup, PropertyDefinition, PropertyIndex, PropertyList
from sleeper.core.properties.docs import render_docs
from sleeper.core.properties.notices import TABLE_CACHE_SECONDS, change_notice, property_notices
from sleeper.runtime.aws.instance import AwsInstance


def should_warn_when_a_property_this_port_does_not_use_is_set() -> None:
    # Given a property marked not used (the Java SDK's async S3 client)
    # When the notices of an edit setting it are drawn
    lines = property_notices(INSTANCE_PROPERTY_INDEX, ["sleeper.ingest.async.client.type"], local=False)
    # Then one warning names it and why it does nothing
    assert lines == [
        "warning: sleeper.ingest.async.client.type is not used by this port (files are uploaded by pyarrow's S3 "
        "filesystem, not by the Java SDK's clients); it is saved but does nothing"
    ]


def should_point_to_sleeper_deploy_for_a_property_only_a_deployment_applies() -> None:
    # Given two properties that take effect when the instance is deployed, and one that takes effect at once
    names = ["sleeper.optional.stacks", "sleeper.log.retention.days", "sleeper.gc.batch.size"]
    # When the notices are drawn for an AWS instance and for a local one
    aws = property_notices(INSTANCE_PROPERTY_INDEX, names, local=False)
    local = property_notices(INSTANCE_PROPERTY_INDEX, names, local=True)
    # Then one note names both deployment properties and the command that applies them
    assert aws == [
        "note: sleeper.optional.stacks, sleeper.log.retention.days take effect when the instance is deployed again: "
        "set the same value in the configuration's instance.properties and run sleeper deploy DIR (a deployment "
        "writes that file to the config bucket)"
    ]
    assert local == [
        "note: on AWS, sleeper.optional.stacks, sleeper.log.retention.days take effect only when the instance is "
        "deployed (sleeper deploy)"
    ]


def should_say_nothing_of_a_property_that_takes_effect_at_once() -> None:
    # Given a table property read whenever a compaction job is created, and an unknown name
    # When the notices are drawn
    lines = property_notices(
        TABLE_PROPERTY_INDEX, ["sleeper.table.compaction.files.batch.size", "no.such"], local=False
    )
    # Then there are none (an unknown name is refused elsewhere)
    assert lines == []


def should_mark_unused_and_deployment_properties_in_the_docs() -> None:
    # Given the rendered docs
    pages = render_docs()
    # When the rows of a property not used and of one applied by a deployment are found
    ingest = pages["instance/ingest.md"]
    unused = next(line for line in ingest.splitlines() if line.startswith("| `sleeper.ingest.async.client.type`"))
    common = pages["instance/common.md"]
    deployed = next(line for line in common.splitlines() if line.startswith("| `sleeper.optional.stacks`"))
    # Then each says so
    assert "**Not used by this port**: files are uploaded by pyarrow's S3 filesystem" in unused
    assert "Takes effect when the instance is deployed again (`sleeper deploy`)." in deployed


def should_refuse_any_value_of_a_refused_property() -> None:
    # Given a definition refused because ignoring it would weaken security
    items = PropertyList(InstancePropertyGroup.COMMON)
    refused = items.user("sleeper.test.key.arn", "A key.", not_used="nothing encrypts with it here", refused=True)
    index = PropertyIndex(items.all(), InstancePropertyGroup.ALL)
    # When a value is checked
    problem = refused.problem("arn:aws:kms:eu-west-2:1:key/k")
    # Then it is refused, naming the property and why; unset is fine
    assert problem == "sleeper.test.key.arn is not supported by this port (nothing encrypts with it here): unset it"
    assert refused.problem(None) is None
    assert property_notices(index, [refused.name], local=False)[0].startswith("warning: sleeper.test.key.arn")


def should_not_define_a_refused_property_without_a_reason() -> None:
    # Given a definition refused with no reason
    # When it is made
    # Then it is an error: a refusal must say why
    with pytest.raises(PropertyError, match="says nothing of why"):
        PropertyDefinition(name="x", description="x", group=InstancePropertyGroup.COMMON, refused=True)


def should_keep_and_accept_a_value_of_a_property_not_used() -> None:
    # Given instance properties
    properties = InstanceProperties({"sleeper.id": "i"})
    # When a property this port does not use is set
    properties.set("sleeper.logging.rust", "debug")
    # Then it is kept, so Sleeper's configuration loads and saves unchanged
    assert properties.get("sleeper.logging.rust") == "debug"
    assert not properties.definition("sleeper.logging.rust").used


def should_say_within_what_bound_running_processes_see_a_table_property_change_on_aws() -> None:
    # Given an AWS instance's properties
    instance = InstanceProperties({"sleeper.id": "inst"})
    # When the notice of a table property change is drawn, on AWS and on a local instance
    aws = change_notice(instance, table=True, local=False)
    local = change_notice(instance, table=True, local=True)
    # Then on AWS it states the bound, which is the table cache of the AWS runtime; a local instance has nothing to say
    assert aws == (
        "note: on AWS, running processes use the new table properties within 60 s (each reads a table's properties "
        "again once its copy is 60 s old); work already under way finishes with the properties it started with"
    )
    assert local is None
    default = inspect.signature(AwsInstance.__init__).parameters["table_cache_seconds"].default
    assert default == TABLE_CACHE_SECONDS == 60


def should_say_when_running_processes_see_an_instance_property_change_on_aws() -> None:
    # Given an instance that does not force a reload of its properties, and one that does
    kept = InstanceProperties({"sleeper.id": "inst"})
    reloaded = InstanceProperties({"sleeper.id": "inst", "sleeper.properties.force.reload": "true"})
    # When the notices of an instance property change are drawn
    kept_notice = change_notice(kept, table=False, local=False)
    reloaded_notice = change_notice(reloaded, table=False, local=False)
    # Then the first says a process sees it when it starts again, and how to make functions read it every time
    assert kept_notice is not None and reloaded_notice is not None
    assert "keep the instance properties they started with" in kept_notice
    assert "set sleeper.properties.force.reload=true" in kept_notice
    assert "read the instance properties again at every invocation" in reloaded_notice
