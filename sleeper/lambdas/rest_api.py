"""REST API handler (Sleeper's ``RestApiLambda``): API Gateway's HTTP API invokes it for each request, after checking
the caller's IAM signature; it hands the request to the registry's feature entry
(:func:`sleeper.rest_api.handler.handle_rest_request`) on the instance from the environment and returns its response
(add a table, list the tables, a table's status)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sleeper.core import operations
from sleeper.lambdas._common import LOGGER, aws_instance, lambda_handler
from sleeper.runtime import handler_entry


@lambda_handler
def handler(event: Mapping[str, Any], context: object = None) -> Any:
    """Lambda handler for one HTTP API request."""
    response = handler_entry(operations.REST_API)(aws_instance(), event)
    context = event.get("requestContext") if isinstance(event, Mapping) else None
    http = context.get("http") if isinstance(context, Mapping) else None
    method, path = (http.get("method"), http.get("path")) if isinstance(http, Mapping) else (None, None)
    LOGGER.info("REST API %s %s: %s", method, path, response.get("statusCode"))
    return response
