"""The AWS runtime: the instance from its config bucket, its admin and the AWS wiring of operations."""

from typing import TYPE_CHECKING

from sleeper.core import lazy_face

if TYPE_CHECKING:
    from sleeper.runtime.aws.api import AwsApi as AwsApi
    from sleeper.runtime.aws.bulk_export import create_bulk_export_tasks_on_ecs as create_bulk_export_tasks_on_ecs
    from sleeper.runtime.aws.compaction import create_compaction_tasks_on_ecs as create_compaction_tasks_on_ecs
    from sleeper.runtime.aws.compaction import follow_stream_event as follow_stream_event
    from sleeper.runtime.aws.deployment import load_deployed_instance as load_deployed_instance
    from sleeper.runtime.aws.deployment import upload_artefacts as upload_artefacts
    from sleeper.runtime.aws.instance import ACCOUNT_ENV as ACCOUNT_ENV
    from sleeper.runtime.aws.instance import CONFIG_BUCKET_ENV as CONFIG_BUCKET_ENV
    from sleeper.runtime.aws.instance import ENDPOINT_ENV as ENDPOINT_ENV
    from sleeper.runtime.aws.instance import INSTANCE_ID_ENV as INSTANCE_ID_ENV
    from sleeper.runtime.aws.instance import AwsInstance as AwsInstance
    from sleeper.runtime.aws.instance import AwsRuntimeConfig as AwsRuntimeConfig
    from sleeper.runtime.aws.instance import AwsRuntimeConfigError as AwsRuntimeConfigError
    from sleeper.runtime.aws.instance import queue_url_properties as queue_url_properties
    from sleeper.runtime.aws.metrics import emf_sink as emf_sink
    from sleeper.runtime.aws.operations import create_ingest_tasks_on_ecs as create_ingest_tasks_on_ecs
    from sleeper.runtime.aws.operations import send_warm_up_queries as send_warm_up_queries
    from sleeper.runtime.aws.teardown import plan_teardown as plan_teardown
    from sleeper.runtime.aws.teardown import tear_down as tear_down


__getattr__, __dir__ = lazy_face(__name__, __file__)
