"""Errors of the Athena connector, and the shape a Lambda function error takes on the wire.

A federation Lambda reports failure the way every Lambda does: the invocation fails and the caller (Athena) receives
``{"errorType", "errorMessage", "stackTrace"}`` instead of a response. The Athena Query Federation SDK reads that
shape back (``LambdaFunctionExceptionSerDe``); its ``AthenaConnectorException`` also carries an error code
(``FederationSourceErrorCode``) that does not travel on the wire, so the code is repeated at the start of the message.
"""

from __future__ import annotations

import traceback
from typing import Any

from sleeper.core import SleeperError

__all__ = [
    "ACCESS_DENIED",
    "ENTITY_NOT_FOUND",
    "INTERNAL_SERVICE",
    "INVALID_INPUT",
    "OPERATION_NOT_SUPPORTED",
    "AthenaConnectorError",
    "lambda_error_payload",
]

ENTITY_NOT_FOUND = "ENTITY_NOT_FOUND_EXCEPTION"
"""A catalog, schema (database) or table that does not exist."""
INVALID_INPUT = "INVALID_INPUT_EXCEPTION"
"""A request that cannot be read or does not fit the table."""
INTERNAL_SERVICE = "INTERNAL_SERVICE_EXCEPTION"
"""A failure inside the connector."""
OPERATION_NOT_SUPPORTED = "OPERATION_NOT_SUPPORTED_EXCEPTION"
"""A request type the connector does not serve."""
ACCESS_DENIED = "ACCESS_DENIED_EXCEPTION"
"""A resource the connector may not use."""


class AthenaConnectorError(SleeperError):
    """A federation request the connector could not serve.

    Args:
        message: What went wrong.
        error_code: A ``FederationSourceErrorCode`` name, such as :data:`ENTITY_NOT_FOUND`.
    """

    def __init__(self, message: str, *, error_code: str = INTERNAL_SERVICE) -> None:
        super().__init__(f"{error_code}: {message}")
        self.error_code = error_code
        self.detail = message


def lambda_error_payload(error: BaseException) -> dict[str, Any]:
    """The payload a Python Lambda returns when its handler raises ``error``: what Athena receives on failure.

    A handler module lets the error propagate so the Lambda runtime reports it; this builds the same shape for local
    runs and tests.
    """
    return {
        "errorMessage": str(error),
        "errorType": type(error).__name__,
        "stackTrace": traceback.format_tb(error.__traceback__),
    }
