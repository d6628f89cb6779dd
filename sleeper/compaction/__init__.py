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
