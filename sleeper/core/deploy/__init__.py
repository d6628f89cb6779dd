"""Deploying an instance to AWS with the CDK: the context the app takes, the configuration it reads (instance and
tables, laid out as Sleeper lays them out) and the nested stacks it deploys. Standard library only, so the ``sleeper``
command prints what a deployment will create from the same code the CDK app builds it with."""

from typing import TYPE_CHECKING

from sleeper.core import lazy_face

if TYPE_CHECKING:
    from sleeper.core.deploy.artefacts import ARM64 as ARM64
    from sleeper.core.deploy.artefacts import ArtefactsPlan as ArtefactsPlan
    from sleeper.core.deploy.artefacts import artefacts_plan as artefacts_plan
    from sleeper.core.deploy.artefacts import image_platform as image_platform
    from sleeper.core.deploy.artefacts import jars_bucket_name as jars_bucket_name
    from sleeper.core.deploy.configuration import ConfigurationError as ConfigurationError
    from sleeper.core.deploy.configuration import InstanceConfiguration as InstanceConfiguration
    from sleeper.core.deploy.configuration import TableConfiguration as TableConfiguration
    from sleeper.core.deploy.configuration import load_configuration_dir as load_configuration_dir
    from sleeper.core.deploy.configuration import load_properties_file as load_properties_file
    from sleeper.core.deploy.context import DeployContextError as DeployContextError
    from sleeper.core.deploy.context import DeployOptions as DeployOptions
    from sleeper.core.deploy.context import read_context as read_context
    from sleeper.core.deploy.plan import CLAIMED_OPERATIONS as CLAIMED_OPERATIONS
    from sleeper.core.deploy.plan import EMR_STACKS as EMR_STACKS
    from sleeper.core.deploy.plan import NEEDS_VPC as NEEDS_VPC
    from sleeper.core.deploy.plan import QUEUE_OPERATIONS as QUEUE_OPERATIONS
    from sleeper.core.deploy.plan import SUPPORTED_OPTIONAL_STACKS as SUPPORTED_OPTIONAL_STACKS
    from sleeper.core.deploy.plan import deploys_dynamodb_state_store as deploys_dynamodb_state_store
    from sleeper.core.deploy.plan import ignored_optional_stacks as ignored_optional_stacks
    from sleeper.core.deploy.plan import planned_stacks as planned_stacks
    from sleeper.core.deploy.plan import wanted_optional_stacks as wanted_optional_stacks


__getattr__, __dir__ = lazy_face(__name__, __file__)
