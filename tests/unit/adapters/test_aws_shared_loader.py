"""The AWS clients' sessions share the process's loader of service models, so a model is read from disk once."""

from __future__ import annotations

from typing import Any

from sleeper.adapters.aws.clients import AwsSettings, dynamodb_client, s3_client, sqs_client

SETTINGS = AwsSettings("eu-west-2", "http://127.0.0.1:9", access_key_id="testing", secret_access_key="testing")


def should_read_each_service_model_once_for_every_client_of_the_process() -> None:
    # Given clients made one after another, each with a session of its own
    makers = (s3_client, sqs_client, dynamodb_client, s3_client, dynamodb_client)
    clients: list[Any] = [make(SETTINGS) for make in makers]
    # When their loaders are compared
    loaders = {id(client._loader) for client in clients}
    # Then they share one, which keeps the models it read and boto3's data directory once however many sessions
    (loader,) = {client._loader for client in clients}
    assert len(loaders) == 1
    assert len(loader.search_paths) == len(set(loader.search_paths))
    assert clients[0].meta.service_model.service_name == "s3" and clients[4].meta.region_name == "eu-west-2"
