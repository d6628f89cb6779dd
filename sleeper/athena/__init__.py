"""Athena Query Federation connectors for Sleeper tables.

A thin Lambda module builds a connector once and hands it each event::

    connector = simple_connector(instance, AthenaSettings(instance_id="my-instance", spill_bucket="spill"))

    def handler(event, context):
        return connector.handle(event, context)

``simple_connector`` and ``iterator_applying_connector`` give a :class:`CompositeHandler` serving every request; the
:class:`MetadataHandler` and :class:`RecordHandler` can also be deployed apart.
"""

from typing import TYPE_CHECKING

from sleeper.athena.exceptions import AthenaConnectorError, lambda_error_payload
from sleeper.athena.handlers import (
    AthenaSettings,
    CompositeHandler,
    ConnectorKind,
    MetadataHandler,
    RecordHandler,
    athena_schema,
    iterator_applying_connector,
    simple_connector,
)
from sleeper.core import lazy_face

__all__ = [
    "AthenaConnectorError",
    "AthenaSettings",
    "CompositeHandler",
    "ConnectorKind",
    "MetadataHandler",
    "RecordHandler",
    "athena_schema",
    "iterator_applying_connector",
    "lambda_error_payload",
    "simple_connector",
]

if TYPE_CHECKING:
    from sleeper.athena.exceptions import INVALID_INPUT as INVALID_INPUT
    from sleeper.athena.handlers import DEFAULT_SPILL_PREFIX as DEFAULT_SPILL_PREFIX

__getattr__, __dir__ = lazy_face(__name__, __file__)
