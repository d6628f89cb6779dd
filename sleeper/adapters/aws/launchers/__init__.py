"""Starting work on AWS: ECS tasks for compaction, ingest and bulk export, and bulk import Spark jobs on EMR
Serverless, an EMR cluster per job, or a persistent EMR cluster. One module per way of starting work:

* :mod:`~sleeper.adapters.aws.launchers.ecs`: ECS tasks (the ``TaskLauncher`` port of
  :mod:`sleeper.core.jobs.task_creation`);
* :mod:`~sleeper.adapters.aws.launchers.bulk_import`: what every bulk import platform shares (the ports of
  :mod:`sleeper.bulk_import.launch_ports`): the job file in the bulk import bucket, the requeue, the Spark driver and
  its arguments;
* :mod:`~sleeper.adapters.aws.launchers.emr_serverless`: bulk import jobs on the EMR Serverless application;
* :mod:`~sleeper.adapters.aws.launchers.emr`: bulk import jobs on an EMR cluster of their own, or as steps of the
  persistent EMR cluster;
* :mod:`~sleeper.adapters.aws.launchers.common`: the one rule they share for reading the instance properties a stack
  sets.

The clients they take are built by :mod:`sleeper.adapters.aws.clients` (an instance's runtime shares one of each
through :class:`~sleeper.adapters.aws.instance_clients.AwsClients`).
"""

from typing import TYPE_CHECKING

from sleeper.core import lazy_face

if TYPE_CHECKING:
    from sleeper.adapters.aws.launchers.bulk_import import bulk_import_job_store as bulk_import_job_store
    from sleeper.adapters.aws.launchers.ecs import EcsTaskLauncher as EcsTaskLauncher
    from sleeper.adapters.aws.launchers.ecs import bulk_export_task_launcher as bulk_export_task_launcher
    from sleeper.adapters.aws.launchers.ecs import compaction_task_launcher as compaction_task_launcher
    from sleeper.adapters.aws.launchers.ecs import ingest_task_launcher as ingest_task_launcher
    from sleeper.adapters.aws.launchers.eks import EksPlatform as EksPlatform
    from sleeper.adapters.aws.launchers.emr import EmrPlatform as EmrPlatform
    from sleeper.adapters.aws.launchers.emr import PersistentEmrPlatform as PersistentEmrPlatform
    from sleeper.adapters.aws.launchers.emr import persistent_emr_requeue as persistent_emr_requeue
    from sleeper.adapters.aws.launchers.emr_serverless import EmrServerlessPlatform as EmrServerlessPlatform


__getattr__, __dir__ = lazy_face(__name__, __file__)
