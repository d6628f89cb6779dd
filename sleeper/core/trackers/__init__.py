"""Job, task and query trackers: the updates workers report, the statuses derived from them, and the ports.

A job tracker stores every update it is given; a job's status is derived when it is read. Updates that share a job
run id belong to one run of the job (a job may run more than once: a message delivered twice, a retry after a
failure). Each run gets a status from its furthest update, where a failure outranks everything else in that run. The
job's status is the furthest status of any of its runs, so a run that is in progress or succeeded outranks runs
that failed (as in Sleeper: a duplicate delivery that fails after another run committed does not make a finished
job look failed).

The query tracker keeps one row per query (sub-query id ``"-"``) and one per sub-query. When a sub-query finishes,
the parent's state is recomputed from all of its sub-queries (``parent_state_if_finished``).

All times are timezone-aware ``datetime`` values. Updates carry their own time; the tracker adds an expiry date
(time to live: one week for job and task updates, one day for queries).

Modules: ``base`` (the error, the checks and the base of job updates, with the grouping of updates into runs shared
by ingest and compaction), ``ingest`` and ``compaction`` (job updates, statuses and tracker ports), ``task`` (task
updates, statuses, port), ``query`` (query rows, the roll-up of sub-queries, port), ``serde`` (the JSON of updates
kept by durable adapters), ``jobs`` (the one job tracker, generic over the kind of job, on the update-store port each
backend implements once) and ``runs`` (the skeleton of one tracked job run, shared by every job runner).
"""
