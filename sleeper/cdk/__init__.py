"""The CDK app and stacks that deploy a Sleeper instance to AWS (the ``cdk`` extra: ``pip install
'sleeper-lsm[cdk]'``; the rest of the package never imports this one).

- :class:`SleeperInstance` (:mod:`sleeper.cdk.construct`): an instance as a stack of your own CDK app.
- :mod:`sleeper.cdk.app`: the app ``sleeper deploy`` runs, ``python -m sleeper.cdk.app`` (``cdk deploy --app
  'python -m sleeper.cdk.app' -c configurationDir=DIR``).

The stacks import only ``sleeper.core`` of the package (its registry of operations, naming and properties).
"""

from sleeper.cdk.construct import Configuration, SleeperInstance, as_configuration

__all__ = ["Configuration", "SleeperInstance", "as_configuration"]
