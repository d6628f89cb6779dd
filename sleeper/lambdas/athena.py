"""Athena connectors: Athena invokes these functions directly with query federation requests (ping, list
schemas and tables, get table, layout and splits, read records); each serves both metadata and record requests, as
Sleeper deploys its composite handlers.

The spill location comes from the environment variables of Athena's connector SDK: ``spill_bucket``,
``spill_prefix`` and ``disable_spill_encryption`` (``true`` turns off the per-split AES-GCM keys). The
iterator-applying connector's query-time iterator comes from ``query_time_iterator_class_name`` and
``query_time_iterator_config`` (fine-grained security: docs/usage/iterators.md), the same for every caller.
``auths_principal_tag``, which took each caller's authorisations from a principal tag in the request, is refused:
the request's identity is written by whoever invokes the function (docs/usage/athena.md, "Who may see what").
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from sleeper.athena import (
    DEFAULT_SPILL_PREFIX,
    INVALID_INPUT,
    AthenaConnectorError,
    AthenaSettings,
    CompositeHandler,
    ConnectorKind,
    iterator_applying_connector,
    simple_connector,
)
from sleeper.lambdas._common import aws_instance, lambda_handler
from sleeper.runtime.aws import AwsInstance

SPILL_BUCKET_ENV = "spill_bucket"
SPILL_PREFIX_ENV = "spill_prefix"
DISABLE_SPILL_ENCRYPTION_ENV = "disable_spill_encryption"
QUERY_TIME_ITERATOR_CLASS_ENV = "query_time_iterator_class_name"
QUERY_TIME_ITERATOR_CONFIG_ENV = "query_time_iterator_config"
AUTHS_PRINCIPAL_TAG_ENV = "auths_principal_tag"
"""No longer honoured: set, the connector refuses to start (see :func:`athena_settings`)."""

_connectors: dict[ConnectorKind, CompositeHandler] = {}


def athena_settings(instance: AwsInstance, environ: Mapping[str, str] | None = None) -> AthenaSettings:
    """The connector's settings: the instance's id and S3 options, the spill location and query-time iterator from
    the environment.

    Raises:
        AthenaConnectorError: If ``auths_principal_tag`` is set, or the iterator config asks for each caller's
            authorisations: no authorisation is taken from a request, so such a connector would not filter as meant.
    """
    env = os.environ if environ is None else environ
    if (env.get(AUTHS_PRINCIPAL_TAG_ENV) or "").strip():
        raise AthenaConnectorError(
            f"{AUTHS_PRINCIPAL_TAG_ENV}={env[AUTHS_PRINCIPAL_TAG_ENV]!r} is set, but the connector takes no "
            "authorisations from a request's principal tags: the request's identity is written by whoever invokes "
            f"the function. Remove {AUTHS_PRINCIPAL_TAG_ENV} and write the authorisations every Athena reader may "
            f"have into {QUERY_TIME_ITERATOR_CONFIG_ENV} (e.g. 'visibility,PUBLIC')",
            error_code=INVALID_INPUT,
        )
    return AthenaSettings(
        instance_id=instance.instance_id,
        spill_bucket=env.get(SPILL_BUCKET_ENV) or None,
        spill_prefix=env.get(SPILL_PREFIX_ENV) or DEFAULT_SPILL_PREFIX,
        encrypt_spills=env.get(DISABLE_SPILL_ENCRYPTION_ENV, "").strip().lower() != "true",
        options=instance.filesystem_options,
        query_time_iterator_class_name=env.get(QUERY_TIME_ITERATOR_CLASS_ENV) or None,
        query_time_iterator_config=env.get(QUERY_TIME_ITERATOR_CONFIG_ENV) or None,
    )


def _connector(kind: ConnectorKind) -> CompositeHandler:
    """The connector of a kind, built once per process (reused by warm invocations)."""
    if kind not in _connectors:
        instance = aws_instance()
        settings = athena_settings(instance)
        build = simple_connector if kind is ConnectorKind.SIMPLE else iterator_applying_connector
        _connectors[kind] = build(instance, settings, spill_filesystem=instance.filesystem)
    return _connectors[kind]


@lambda_handler
def simple(event: Mapping[str, Any], context: object = None) -> dict[str, Any]:
    """The simple connector: one split per data file, the rows as stored (no merge, no table processing)."""
    return _connector(ConnectorKind.SIMPLE).handle(event, context)


@lambda_handler
def iterator_applying(event: Mapping[str, Any], context: object = None) -> dict[str, Any]:
    """The iterator-applying connector: one split per leaf partition, rows as a Sleeper query returns them."""
    return _connector(ConnectorKind.ITERATOR_APPLYING).handle(event, context)


def reset() -> None:
    """Forgets the connectors built (a test switching instances)."""
    _connectors.clear()
