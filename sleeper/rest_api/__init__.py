"""The REST API (Sleeper's ``RestApiStack`` and ``java/rest-api``): add a table, list the tables, a table's status.

The runtime-neutral handler is :func:`sleeper.rest_api.handler.handle_rest_request`; the Lambda is
``sleeper/lambdas/rest_api.py``, the stack ``sleeper/cdk/rest_api.py``, and the emulated instance serves it too
(``sleeper.emulator.rest_api``)."""
