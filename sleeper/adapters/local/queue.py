"""Durable queues with SQS semantics in a SQLite database shared by several worker processes.

Every change runs in a ``BEGIN IMMEDIATE`` transaction, so a receive claims its messages atomically across processes
and no message is handed to two consumers within its visibility timeout. The database is the instance's one
``SqliteDatabase`` (WAL mode, busy timeout, ``DatabaseLockedError`` when another process holds it too long); tables
are prefixed ``queue_`` because other adapters keep their tables in the same file.

Beyond SQS: a ``SqliteQueues`` may name its ``receiver`` (the local task of the process, see
``sleeper.runtime.local.tasks``); every message it receives is then recorded as received by it, so that when that
process is found dead, :meth:`SqliteQueues.release_received_by` makes its messages visible again at once instead of
after the visibility timeout.
"""

from __future__ import annotations

import json
import sqlite3
import time
import uuid
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import asdict
from pathlib import Path

from sleeper.adapters.local.sqlite import SqliteDatabase
from sleeper.core import (
    DEDUPLICATION_WINDOW_SECONDS,
    Clock,
    Message,
    OutgoingMessage,
    Queue,
    QueueConfig,
    QueueCounts,
    QueueNotFoundError,
    Queues,
    ReceiptHandleError,
    check_receive,
    check_visibility_change,
    prepare_send,
)

DEFAULT_POLL_SECONDS = 0.05


_SCHEMA = """
CREATE TABLE IF NOT EXISTS queue_config (
    name TEXT PRIMARY KEY,
    config TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS queue_messages (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    queue_name TEXT NOT NULL,
    message_id TEXT NOT NULL,
    body TEXT NOT NULL,
    group_id TEXT,
    visible_at REAL NOT NULL,
    receive_count INTEGER NOT NULL DEFAULT 0,
    receipt_handle TEXT UNIQUE,
    received_at REAL,
    dead_letter_source TEXT
);
CREATE INDEX IF NOT EXISTS queue_messages_in_order ON queue_messages (queue_name, seq);
CREATE INDEX IF NOT EXISTS queue_messages_by_group ON queue_messages (queue_name, group_id, seq);
CREATE TABLE IF NOT EXISTS queue_receipts (
    receipt_handle TEXT PRIMARY KEY,
    queue_name TEXT NOT NULL,
    receiver TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS queue_receipts_by_receiver ON queue_receipts (receiver);
CREATE TABLE IF NOT EXISTS queue_dedup (
    queue_name TEXT NOT NULL,
    dedup_id TEXT NOT NULL,
    message_id TEXT NOT NULL,
    expires_at REAL NOT NULL,
    PRIMARY KEY (queue_name, dedup_id)
);
"""

_COLUMNS = "seq, message_id, body, group_id, receive_count"


class SqliteQueues(Queues["SqliteQueue", sqlite3.Connection]):
    """A family of durable queues in one SQLite database (implements ``sleeper.core.queue.Queues``).

    Queue configuration is stored in the database, so a process that opens a queue by name alone gets the options
    another process created it with.

    Args:
        db_path: The SQLite database file (created if missing).
        clock: Current time in seconds; defaults to ``time.time``.
        poll_seconds: How often a long-poll receive looks for new messages.

    Attributes:
        receiver: Who receives through these queues (a local task id), recorded with each message received while it
            is set; None records nothing.
    """

    def __init__(self, db_path: str | Path, clock: Clock = time.time, *, poll_seconds: float = DEFAULT_POLL_SECONDS):
        self._db = SqliteDatabase(db_path, schema=_SCHEMA)
        self._clock = clock
        self._poll_seconds = poll_seconds
        self.receiver: str | None = None

    def _transaction(self) -> AbstractContextManager[sqlite3.Connection]:
        return self._db.write()

    def _load(self, transaction: sqlite3.Connection, name: str) -> QueueConfig | None:
        row = transaction.execute("SELECT config FROM queue_config WHERE name = ?", (name,)).fetchone()
        return None if row is None else QueueConfig(**json.loads(row[0]))

    def _save(self, transaction: sqlite3.Connection, config: QueueConfig, existing: QueueConfig | None) -> None:
        transaction.execute(
            "INSERT INTO queue_config (name, config) VALUES (?, ?)"
            " ON CONFLICT (name) DO UPDATE SET config = excluded.config",
            (config.name, json.dumps(asdict(config))),
        )

    def _open(self, transaction: sqlite3.Connection, config: QueueConfig) -> SqliteQueue:
        return SqliteQueue(config.name, self._db, self._clock, self._poll_seconds, lambda: self.receiver)

    def release_received_by(self, receiver: str) -> int:
        """Makes every message a receiver holds in flight visible now (its receive count kept), on every queue.

        Used when the receiver is known to be gone, so its messages need not wait out their visibility timeout.

        Returns:
            The number of messages made visible.
        """
        with self._db.write() as connection:
            now = self._clock()
            released = connection.execute(
                "UPDATE queue_messages SET visible_at = ? WHERE visible_at > ? AND receipt_handle IN"
                " (SELECT receipt_handle FROM queue_receipts WHERE receiver = ?)",
                (now, now, receiver),
            ).rowcount
            connection.execute("DELETE FROM queue_receipts WHERE receiver = ?", (receiver,))
            return int(released)

    def forget_receiver(self, receiver: str) -> None:
        """Forgets which messages a receiver received (when it ends; its messages in flight stay in flight)."""
        with self._db.write() as connection:
            connection.execute("DELETE FROM queue_receipts WHERE receiver = ?", (receiver,))

    def names(self) -> list[str]:
        """Names of all queues, sorted."""
        with self._db.read() as connection:
            return [row[0] for row in connection.execute("SELECT name FROM queue_config ORDER BY name")]

    def close(self) -> None:
        """Closes this process's connection (it reopens on next use)."""
        self._db.close()


class SqliteQueue(Queue):
    """One queue of a ``SqliteQueues`` family (implements ``sleeper.core.queue.Queue``)."""

    def __init__(
        self,
        name: str,
        db: SqliteDatabase,
        clock: Clock,
        poll_seconds: float,
        receiver: Callable[[], str | None] = lambda: None,
    ) -> None:
        self._name = name
        self._db = db
        self._clock = clock
        self._poll_seconds = poll_seconds
        self._receiver = receiver

    @property
    def name(self) -> str:
        """The queue name."""
        return self._name

    @property
    def config(self) -> QueueConfig:
        """The queue's current configuration."""
        with self._db.read() as connection:
            return _require_config(connection, self._name)

    def send_batch(self, messages: Sequence[str | OutgoingMessage]) -> list[str]:
        """Sends several messages in one transaction; returns their ids in order."""
        with self._db.write() as connection:
            config = _require_config(connection, self._name)
            prepared = [prepare_send(config, message) for message in messages]
            now = self._clock()
            if any(item.dedup_id is not None for item in prepared):
                connection.execute(
                    "DELETE FROM queue_dedup WHERE queue_name = ? AND expires_at <= ?", (self._name, now)
                )
            ids: list[str] = []
            for item in prepared:
                if item.dedup_id is not None:
                    seen = connection.execute(
                        "SELECT message_id FROM queue_dedup WHERE queue_name = ? AND dedup_id = ?",
                        (self._name, item.dedup_id),
                    ).fetchone()
                    if seen is not None:
                        ids.append(seen[0])
                        continue
                message_id = str(uuid.uuid4())
                if item.dedup_id is not None:
                    connection.execute(
                        "INSERT INTO queue_dedup (queue_name, dedup_id, message_id, expires_at) VALUES (?, ?, ?, ?)",
                        (self._name, item.dedup_id, message_id, now + DEDUPLICATION_WINDOW_SECONDS),
                    )
                connection.execute(
                    "INSERT INTO queue_messages (queue_name, message_id, body, group_id, visible_at)"
                    " VALUES (?, ?, ?, ?, ?)",
                    (self._name, message_id, item.body, item.group_id, now + item.delay_seconds),
                )
                ids.append(message_id)
            return ids

    def receive(
        self, max_messages: int = 1, *, visibility_timeout_seconds: float | None = None, wait_seconds: float = 0
    ) -> list[Message]:
        """Receives up to ``max_messages`` messages (see ``Queue.receive``); a long poll checks every ~50 ms."""
        check_receive(max_messages, visibility_timeout_seconds, wait_seconds)
        deadline = time.monotonic() + wait_seconds
        while True:
            received = self._receive_now(max_messages, visibility_timeout_seconds)
            remaining = deadline - time.monotonic()
            if received or remaining <= 0:
                return received
            time.sleep(min(self._poll_seconds, remaining))

    def change_visibility(self, receipt_handle: str, seconds: float) -> None:
        """Makes a received message visible ``seconds`` from now (see ``Queue.change_visibility``)."""
        with self._db.write() as connection:
            now = self._clock()
            row = connection.execute(
                "SELECT seq, received_at FROM queue_messages"
                " WHERE queue_name = ? AND receipt_handle = ? AND visible_at > ?",
                (self._name, receipt_handle, now),
            ).fetchone()
            if row is None:
                raise ReceiptHandleError(f"receipt handle is not in flight on queue {self._name}")
            check_visibility_change(seconds, now, row[1])
            connection.execute("UPDATE queue_messages SET visible_at = ? WHERE seq = ?", (now + seconds, row[0]))

    def delete(self, receipt_handle: str) -> None:
        """Deletes a received message; a stale handle does nothing."""
        with self._db.write() as connection:
            connection.execute(
                "DELETE FROM queue_messages WHERE queue_name = ? AND receipt_handle = ?", (self._name, receipt_handle)
            )
            connection.execute("DELETE FROM queue_receipts WHERE receipt_handle = ?", (receipt_handle,))

    def approximate_counts(self) -> QueueCounts:
        """Visible and in-flight message counts."""
        with self._db.read() as connection:
            now = self._clock()
            visible, in_flight = connection.execute(
                "SELECT COALESCE(SUM(visible_at <= ?), 0),"
                " COALESCE(SUM(receipt_handle IS NOT NULL AND visible_at > ?), 0)"
                " FROM queue_messages WHERE queue_name = ?",
                (now, now, self._name),
            ).fetchone()
            return QueueCounts(visible=int(visible), in_flight=int(in_flight))

    def deliver_delayed_now(self) -> int:
        """Makes the messages sent with a delay that has not passed yet visible now (a local runner that would
        otherwise wait out the delay); returns how many."""
        with self._db.write() as connection:
            now = self._clock()
            cursor = connection.execute(
                "UPDATE queue_messages SET visible_at = ?"
                " WHERE queue_name = ? AND receipt_handle IS NULL AND visible_at > ?",
                (now, self._name, now),
            )
            return int(cursor.rowcount)

    def redrive_dead_letters(self, to_queue: str | None = None) -> int:
        """Moves messages not in flight to ``to_queue`` or back to their source (see ``Queue.redrive_dead_letters``)."""
        with self._db.write() as connection:
            now = self._clock()
            rows = connection.execute(
                "SELECT seq, dead_letter_source FROM queue_messages"
                " WHERE queue_name = ? AND NOT (receipt_handle IS NOT NULL AND visible_at > ?) ORDER BY seq",
                (self._name, now),
            ).fetchall()
            moves = [(seq, to_queue or source) for seq, source in rows if (to_queue or source) is not None]
            targets = {target: _require_config(connection, target) for _, target in moves}
            for seq, target in moves:
                _move(connection, seq, targets[target], now, dead_letter_source=None)
            return len(moves)

    def _receive_now(self, max_messages: int, visibility_timeout_seconds: float | None) -> list[Message]:
        now = self._clock()
        with self._db.read() as connection:
            # A cheap check first, so idle pollers do not queue up for the write lock.
            if (
                connection.execute(
                    "SELECT 1 FROM queue_messages WHERE queue_name = ? AND visible_at <= ? LIMIT 1", (self._name, now)
                ).fetchone()
                is None
            ):
                return []
        with self._db.write() as connection:
            now = self._clock()
            config = _require_config(connection, self._name)
            visibility = (
                visibility_timeout_seconds
                if visibility_timeout_seconds is not None
                else config.visibility_timeout_seconds
            )
            dead_letter = _require_config(connection, config.dead_letter_queue) if config.dead_letter_queue else None
            receiver = self._receiver()
            received: list[Message] = []
            taken: list[int] = []
            taken_groups: list[str] = []
            while len(received) < max_messages:
                candidates = self._candidates(
                    connection, config, now, max_messages - len(received), taken, taken_groups
                )
                moved = False
                for seq, message_id, body, group_id, receive_count in candidates:
                    if (
                        dead_letter is not None
                        and config.max_receive_count is not None
                        and receive_count >= config.max_receive_count
                    ):
                        _move(connection, seq, dead_letter, now, dead_letter_source=self._name)
                        moved = True
                        continue
                    handle = uuid.uuid4().hex
                    connection.execute(
                        "UPDATE queue_messages SET receive_count = ?, receipt_handle = ?, received_at = ?,"
                        " visible_at = ? WHERE seq = ?",
                        (receive_count + 1, handle, now, now + visibility, seq),
                    )
                    if receiver is not None:
                        connection.execute(
                            "INSERT INTO queue_receipts (receipt_handle, queue_name, receiver) VALUES (?, ?, ?)",
                            (handle, self._name, receiver),
                        )
                    taken.append(seq)
                    taken_groups.append(group_id or "")
                    received.append(
                        Message(
                            message_id=message_id,
                            body=body,
                            receipt_handle=handle,
                            receive_count=receive_count + 1,
                            group_id=group_id,
                        )
                    )
                if not moved:
                    break
            return received

    def _candidates(
        self,
        connection: sqlite3.Connection,
        config: QueueConfig,
        now: float,
        limit: int,
        taken: list[int],
        taken_groups: list[str],
    ) -> list[tuple[int, str, str, str | None, int]]:
        if not config.fifo:
            sql = (
                f"SELECT {_COLUMNS} FROM queue_messages WHERE queue_name = ? AND visible_at <= ?"
                f" AND seq NOT IN ({','.join('?' * len(taken))}) ORDER BY seq LIMIT ?"
            )
            return connection.execute(sql, (self._name, now, *taken, limit)).fetchall()
        # FIFO: only the oldest message of each group can be delivered, and only while it is visible; a received
        # head stays the oldest until deleted, so its group is blocked while it is in flight.
        sql = (
            f"SELECT {_COLUMNS} FROM queue_messages AS m WHERE m.queue_name = ? AND m.visible_at <= ?"
            " AND NOT EXISTS (SELECT 1 FROM queue_messages AS g"
            " WHERE g.queue_name = m.queue_name AND g.group_id IS m.group_id AND g.seq < m.seq)"
            f" AND COALESCE(m.group_id, '') NOT IN ({','.join('?' * len(taken_groups))}) ORDER BY m.seq LIMIT ?"
        )
        return connection.execute(sql, (self._name, now, *taken_groups, limit)).fetchall()


def _move(
    connection: sqlite3.Connection, seq: int, target: QueueConfig, now: float, *, dead_letter_source: str | None
) -> None:
    """Moves a message to the tail of another queue as a fresh message (same id and body, receive count 0)."""
    connection.execute(
        "INSERT INTO queue_messages (queue_name, message_id, body, group_id, visible_at, dead_letter_source)"
        " SELECT ?, message_id, body, CASE WHEN ? AND group_id IS NULL THEN message_id ELSE group_id END, ?, ?"
        " FROM queue_messages WHERE seq = ?",
        (target.name, target.fifo, now, dead_letter_source, seq),
    )
    connection.execute("DELETE FROM queue_messages WHERE seq = ?", (seq,))


def _require_config(connection: sqlite3.Connection, name: str) -> QueueConfig:
    row = connection.execute("SELECT config FROM queue_config WHERE name = ?", (name,)).fetchone()
    if row is None:
        raise QueueNotFoundError(f"no queue named {name}")
    return QueueConfig(**json.loads(row[0]))
