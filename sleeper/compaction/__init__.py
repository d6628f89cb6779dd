"""Compaction: job creation, execution of jobs by tasks, and commits of their output to the state store.

Modules:

* ``execution``: :func:`~sleeper.compaction.execution.run_compaction` merges a job's sorted input files, limited to
  its partition's region, applies the table's filters and aggregations and writes one sorted output file with its
  sketches, in memory bounded by the number of inputs times the batch size.
* ``datafusion_engine``: the same with Apache DataFusion's sort-preserving merge, when the ``datafusion`` package is
  installed and the table's ``sleeper.table.data.engine`` is ``DATAFUSION``.
* ``commit``: committing a finished job (synchronously, or by a request to the commit queue), and the committer side
  that applies batches of commit requests.
* ``task``: the compaction task loop that ECS tasks and local workers run: receive, keep the message invisible, run,
  commit, delete; with idle exit, consecutive failure limits and task tracking.
* ``ports``: the Protocols through which these talk to the instance and its tables.
"""

from typing import TYPE_CHECKING

from sleeper.core import lazy_face

if TYPE_CHECKING:
    from sleeper.compaction.commit import handle_commit_messages as handle_commit_messages
    from sleeper.compaction.creation import CompactionJobSendError as CompactionJobSendError
    from sleeper.compaction.creation import PendingBatchError as PendingBatchError
    from sleeper.compaction.entry import create_jobs_for_table as create_jobs_for_table
    from sleeper.compaction.entry import run_compaction_job as run_compaction_job
    from sleeper.compaction.exceptions import CompactionConfigError as CompactionConfigError
    from sleeper.compaction.exceptions import CompactionError as CompactionError
    from sleeper.compaction.exceptions import CompactionInputError as CompactionInputError
    from sleeper.compaction.purge import DeleteLeft as DeleteLeft
    from sleeper.compaction.purge import PurgeResult as PurgeResult
    from sleeper.compaction.purge import deletes_left as deletes_left
    from sleeper.compaction.purge import purge_table as purge_table
    from sleeper.compaction.retry import retry_dead_lettered_jobs as retry_dead_lettered_jobs
    from sleeper.compaction.strategies import InvalidCompactionStrategyError as InvalidCompactionStrategyError
    from sleeper.compaction.strategies import UnknownCompactionStrategyError as UnknownCompactionStrategyError
    from sleeper.compaction.task import TaskSettings as TaskSettings
    from sleeper.compaction.task import TaskSummary as TaskSummary
    from sleeper.compaction.task import run_compaction_task as run_compaction_task
    from sleeper.compaction.task_creation import create_compaction_tasks as create_compaction_tasks


__getattr__, __dir__ = lazy_face(__name__, __file__)
