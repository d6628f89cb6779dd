"""An emulated AWS instance on this machine: a moto server, the instance's resources named as the CDK stacks name
them, and a pump doing what AWS would do with them (see docs/usage/aws-local.md).

* :mod:`~sleeper.emulator.resources` creates what a deployment creates (buckets, DynamoDB tables, queues, ECS
  clusters and task definitions, the EMR Serverless application, the scheduled rules) and writes
  ``instance.properties``, with the names of :mod:`sleeper.core.naming`;
* :mod:`~sleeper.emulator.functions` runs a handler as Lambda does: loaded by the registry's ``module:function`` with
  importlib, given the function's environment, Lambda's context object and the event shapes;
* :mod:`~sleeper.emulator.pump` delivers scheduled events, SQS batches and the files transaction log's DynamoDB
  stream to the handlers, one round at a time, and :mod:`~sleeper.emulator.tasks` runs the ECS tasks, EMR Serverless
  job runs and EMR steps started on the instance as local processes;
* :mod:`~sleeper.emulator.websocket_api` serves the WebSocket query API on the loopback address (SigV4 checked on
  ``$connect``, messages routed to the registry's handler, its management API delivering posts to the open sockets);
* :mod:`~sleeper.emulator.instance` starts and stops the server
  (:class:`~sleeper.emulator.instance.EmulatedAwsInstance`) and lists the environment that makes a client reach it.

The emulator builds on the AWS runtime (``sleeper.runtime.aws.instance``) and adapters (``sleeper.adapters.aws``);
only the CLI (``sleeper aws-local``) and tests import it.
"""

from typing import TYPE_CHECKING

from sleeper.core import lazy_face

if TYPE_CHECKING:
    from sleeper.emulator.instance import EmulatedAwsInstance as EmulatedAwsInstance
    from sleeper.emulator.instance import load_properties_file as load_properties_file
    from sleeper.emulator.instance import serve as serve


__getattr__, __dir__ = lazy_face(__name__, __file__)
