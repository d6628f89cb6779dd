"""A table's compaction jobs sent again from the dead-letter queue of the compaction job queue.

A compaction job that keeps failing (its iterator cannot be loaded, an input cannot be read, ...) is moved by the
compaction job queue to its dead-letter queue once it has been received ``sleeper.compaction.job.max.retries`` times,
as in Sleeper. Its input files stay assigned to it there, so no other job takes them and they are not compacted until
it runs: the job is not lost, and the compaction job tracker shows its failed runs with their reasons.
:func:`retry_dead_lettered_jobs` sends a table's dead-lettered jobs back to the job queue to be run again, once their
cause is mended (``sleeper compact`` does it before it creates jobs; ``sleeper dead-letters retry CompactionJobQ``
does it for every table). A job whose input files moved on meanwhile is rejected and dropped when it runs, as any
stale job is.
"""

from __future__ import annotations

import logging

from sleeper.core import MAX_RECEIVE_BATCH, Queue, ReceiptHandleError
from sleeper.core.jobs import CompactionJob, MessageError

__all__ = ["retry_dead_lettered_jobs"]

_LOG = logging.getLogger(__name__)


def retry_dead_lettered_jobs(job_queue: Queue, dead_letters: Queue, table_id: str) -> list[str]:
    """Moves a table's compaction jobs from the job queue's dead-letter queue back to the job queue.

    Every visible dead letter is received once: a job of the table is sent to the job queue (with a new receive
    count) and then deleted from the dead-letter queue; any other message (another table's job, an unreadable
    message) is left there, visible again at once.

    Args:
        job_queue: The compaction job queue (``CompactionJobQ``).
        dead_letters: Its dead-letter queue.
        table_id: The table whose jobs are sent again.

    Returns:
        The ids of the jobs sent again, in the order received.
    """
    retried: list[str] = []
    left: list[str] = []
    while True:
        messages = dead_letters.receive(MAX_RECEIVE_BATCH)
        if not messages:
            break
        for message in messages:
            try:
                job = CompactionJob.from_json(message.body)
            except MessageError:
                left.append(message.receipt_handle)
                continue
            if job.table_id != table_id:
                left.append(message.receipt_handle)
                continue
            job_queue.send(message.body)
            dead_letters.delete(message.receipt_handle)
            retried.append(job.job_id)
            _LOG.info("compaction job %s of table %s sent again from the dead-letter queue", job.job_id, table_id)
    for handle in left:
        try:
            dead_letters.change_visibility(handle, 0)
        except ReceiptHandleError:  # its visibility timeout passed already: it is visible
            pass
    return retried
