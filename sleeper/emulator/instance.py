"""An emulated AWS instance: a moto server in this process on ``127.0.0.1:<port>``, holding one instance provisioned
as a deployment leaves it (:mod:`sleeper.emulator.resources`), and the pump that drives it
(:mod:`sleeper.emulator.pump`). Any boto3 client with ``AWS_ENDPOINT_URL`` set to the server sees the instance
(:meth:`EmulatedAwsInstance.environment` lists the variables to export)."""

from __future__ import annotations

import logging
import socket
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from sleeper.adapters.aws import AwsSettings
from sleeper.core import SleeperError, install_command
from sleeper.core.properties import instance_cdk as cdk
from sleeper.core.properties import load as load_java_properties
from sleeper.emulator.moto_guards import MotoGuardError, guard_moto
from sleeper.emulator.moto_speedups import speed_up_moto
from sleeper.emulator.pump import Pump
from sleeper.emulator.resources import DEFAULT_ACCOUNT, DEFAULT_REGION, provision_emulated_instance
from sleeper.runtime.aws import (
    ACCOUNT_ENV,
    CONFIG_BUCKET_ENV,
    ENDPOINT_ENV,
    INSTANCE_ID_ENV,
    AwsInstance,
    AwsRuntimeConfig,
)

__all__ = ["EmulatedAwsInstance", "EmulatorError", "load_properties_file", "serve"]

_CREDENTIALS = "testing"


class EmulatorError(SleeperError):
    """The emulated instance could not be started."""


def load_properties_file(path: str | Path) -> dict[str, str]:
    """Instance properties from a Java properties file.

    Raises:
        EmulatorError: If the file cannot be read.
    """
    try:
        return load_java_properties(Path(path).read_text(encoding="utf-8"))
    except OSError as e:
        raise EmulatorError(f"cannot read properties file {path}: {e}") from e


def _check_free(host: str, port: int) -> None:
    if port == 0:
        return
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError as e:
            raise EmulatorError(f"cannot serve on {host}:{port}: {e.strerror or e}") from e


class EmulatedAwsInstance:
    """A moto server in this process holding one instance, and the pump that drives it.

    Use as a context manager, or call :meth:`start` and :meth:`stop`.

    Args:
        instance_id: The instance id.
        port: The port on 127.0.0.1 (0: any free port).
        host: The address to listen on.
        region: The region.
        account: The account (moto's, so names derived through STS match).
        properties: Further instance properties.
    """

    def __init__(
        self,
        instance_id: str,
        *,
        port: int = 0,
        host: str = "127.0.0.1",
        region: str = DEFAULT_REGION,
        account: str = DEFAULT_ACCOUNT,
        properties: Mapping[str, str] | None = None,
    ) -> None:
        self.instance_id = instance_id
        self.region = region
        self.account = account
        self._host = host
        self._port = port
        self._properties = dict(properties or {})
        self._server: Any = None
        self._websocket: Any = None
        self._rest: Any = None
        self._endpoint: str | None = None
        self._config: AwsRuntimeConfig | None = None

    def __enter__(self) -> EmulatedAwsInstance:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> None:
        """Starts the moto server and provisions the instance.

        moto is first given the guards of :mod:`sleeper.emulator.moto_guards`, so its conditional writes are atomic as
        DynamoDB's and S3's are.

        Raises:
            EmulatorError: If moto's server is not installed, cannot be guarded (a moto version whose internals the
                guards do not know) or cannot listen on the port.
        """
        try:
            from moto.server import ThreadedMotoServer
        except ImportError as e:
            raise EmulatorError(
                "the emulated instance needs moto's server: install the aws-local extra "
                f"({install_command('aws-local')})"
            ) from e
        logging.getLogger("werkzeug").setLevel(logging.WARNING)  # werkzeug logs every request at INFO otherwise
        speed_up_moto()
        try:
            guard_moto()  # moto's conditional writes are not atomic alone: see sleeper.emulator.moto_guards
        except MotoGuardError as e:
            raise EmulatorError(str(e)) from e
        _check_free(self._host, self._port)  # moto's server thread would die on a taken port and start() wait forever
        server = ThreadedMotoServer(ip_address=self._host, port=self._port, verbose=False)
        server.start()
        self._server = server
        host, port = server.get_host_and_port()
        self._endpoint = f"http://{host}:{port}"
        try:
            websocket = self._start_websocket_api()
            rest = self._start_rest_api()
            properties = {
                **self._properties,
                cdk.QUERY_WEBSOCKET_API_URL.name: websocket.url,
                cdk.REST_API_URL.name: rest.url,
            }
            self._config = provision_emulated_instance(
                self.settings, self.instance_id, account=self.account, properties=properties
            )
            from sleeper.core import naming, operations

            websocket.use(self._function(operations.WEB_SOCKET_QUERY, naming.WEBSOCKET_QUERY_FUNCTION))
            rest.use(self._function(operations.REST_API, naming.REST_API_FUNCTION))
        except BaseException:
            self.stop()
            raise

    def _start_websocket_api(self) -> Any:
        """The WebSocket query API on the loopback address (:mod:`sleeper.emulator.websocket_api`), its events refused
        until the instance is provisioned."""
        try:
            from sleeper.adapters.aws import SigningKey
            from sleeper.emulator.websocket_api import WebSocketApiServer
        except ImportError as e:
            raise EmulatorError(
                f"the emulated instance's WebSocket query API needs {e.name}: install the aws-local extra "
                f"({install_command('aws-local')})"
            ) from e
        websocket = WebSocketApiServer(SigningKey(_CREDENTIALS, _CREDENTIALS, self.region), host=self._host)
        try:
            websocket.start()
        except OSError as e:
            raise EmulatorError(f"cannot serve the WebSocket query API on {self._host}: {e.strerror or e}") from e
        self._websocket = websocket
        return websocket

    def _start_rest_api(self) -> Any:
        """The REST API on the loopback address (:mod:`sleeper.emulator.rest_api`), its requests refused until the
        instance is provisioned."""
        from sleeper.adapters.aws import SigningKey
        from sleeper.emulator.rest_api import RestApiServer

        try:
            rest = RestApiServer(SigningKey(_CREDENTIALS, _CREDENTIALS, self.region), host=self._host)
        except OSError as e:
            raise EmulatorError(f"cannot serve the REST API on {self._host}: {e.strerror or e}") from e
        rest.start()
        self._rest = rest
        return rest

    def _function(self, handler_name: str, function_suffix: str) -> Any:
        """Invokes a registry handler an API routes to as Lambda would: loaded by its ``module:function``, in the
        deployed function's environment, with its context."""
        from sleeper.core import naming, operations
        from sleeper.emulator.functions import LambdaContext, function_environment, resolve_handler

        spec = operations.handler(handler_name)
        environment = self.environment()
        function_name = naming.function_name(self.instance_id, function_suffix)

        def invoke(event: dict[str, Any]) -> Any:
            handler = resolve_handler(spec.handler)
            if handler is None:
                return {"statusCode": 502, "body": f"the function's handler {spec.handler} cannot be loaded"}
            context = LambdaContext(function_name, spec.timeout_seconds, memory_limit_in_mb=spec.memory_mb)
            with function_environment(environment):
                return handler(event, context)

        return invoke

    def stop(self) -> None:
        """Stops the server (everything in it is lost)."""
        if self._websocket is not None:
            self._websocket.stop()
            self._websocket = None
        if self._rest is not None:
            self._rest.stop()
            self._rest = None
        if self._server is not None:
            self._server.stop()
            self._server = None

    @property
    def endpoint(self) -> str:
        """The server's URL, ``http://127.0.0.1:<port>``."""
        if self._endpoint is None:
            raise EmulatorError("the emulated instance is not started")
        return self._endpoint

    @property
    def settings(self) -> AwsSettings:
        """How to reach the server."""
        return AwsSettings(self.region, self.endpoint, access_key_id=_CREDENTIALS, secret_access_key=_CREDENTIALS)

    @property
    def config(self) -> AwsRuntimeConfig:
        """Where the instance is."""
        if self._config is None:
            raise EmulatorError("the emulated instance is not started")
        return self._config

    def environment(self) -> dict[str, str]:
        """The environment variables that make a boto3 client, a handler, a container or the CLI reach the
        instance."""
        return {
            ENDPOINT_ENV: self.endpoint,
            "AWS_REGION": self.region,
            "AWS_DEFAULT_REGION": self.region,
            "AWS_ACCESS_KEY_ID": _CREDENTIALS,
            "AWS_SECRET_ACCESS_KEY": _CREDENTIALS,
            CONFIG_BUCKET_ENV: self.config.config_bucket,
            INSTANCE_ID_ENV: self.instance_id,
            ACCOUNT_ENV: self.account,
        }

    @property
    def websocket_url(self) -> str:
        """The WebSocket query API's URL (``sleeper.query.websocket.api.url``): ``ws://127.0.0.1:<port>/live``."""
        if self._websocket is None:
            raise EmulatorError("the emulated instance is not started")
        return str(self._websocket.url)

    @property
    def rest_api_url(self) -> str:
        """The REST API's URL (``sleeper.rest.api.url``): ``http://127.0.0.1:<port>``."""
        if self._rest is None:
            raise EmulatorError("the emulated instance is not started")
        return str(self._rest.url)

    def instance(self) -> AwsInstance:
        """A new handle on the instance."""
        return AwsInstance(self.config)

    def pump(self, *, environment_extra: Mapping[str, str] | None = None, **options: Any) -> Pump:
        """A pump for the instance (``options`` go to :class:`Pump`); task processes get :meth:`environment` and
        ``environment_extra``."""
        return Pump(self.instance(), environment={**self.environment(), **(environment_extra or {})}, **options)


def serve(
    instance_id: str,
    *,
    port: int,
    properties: Mapping[str, str] | None = None,
    stop: threading.Event | None = None,
    on_ready: Callable[[EmulatedAwsInstance], None] | None = None,
    interval_seconds: float = 1.0,
    **pump_options: Any,
) -> None:
    """Runs an emulated instance in the foreground until ``stop`` is set (or the process is interrupted).

    Args:
        instance_id: The instance id.
        port: The port on 127.0.0.1.
        properties: Further instance properties.
        stop: Set to stop.
        on_ready: Called once the instance is provisioned, before the pump starts.
        interval_seconds: The wait after a pump round with nothing to do.
        pump_options: Options of the :class:`Pump`.
    """
    stop = stop or threading.Event()
    with EmulatedAwsInstance(instance_id, port=port, properties=properties) as emulated:
        if on_ready is not None:
            on_ready(emulated)
        pump = emulated.pump(**pump_options)
        try:
            pump.run_forever(stop, interval_seconds=interval_seconds)
        except KeyboardInterrupt:
            stop.set()
        finally:
            pump.close()
