"""Behaviour of the in-memory queues that the contract suite does not cover (sleeper.adapters.memory.queue)."""

from __future__ import annotations

import threading
from collections import Counter

from sleeper.adapters.memory.queue import InMemoryQueues
from sleeper.core.queue import QueueCounts


def should_hand_each_message_to_one_of_several_consumer_threads() -> None:
    # Given 500 messages and 8 consumer threads that delete what they receive
    clock_value = 1000.0
    queue = InMemoryQueues(lambda: clock_value).queue("jobs", visibility_timeout=600)
    bodies = [f"job-{i}" for i in range(500)]
    for start in range(0, 500, 10):
        queue.send_batch(bodies[start : start + 10])
    seen: list[str] = []
    lock = threading.Lock()

    def consume() -> None:
        while messages := queue.receive(3):
            for message in messages:
                with lock:
                    seen.append(message.body)
                queue.delete(message.receipt_handle)

    # When
    threads = [threading.Thread(target=consume) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    # Then
    assert Counter(seen) == Counter(bodies)
    assert queue.approximate_counts() == QueueCounts(visible=0, in_flight=0)


def should_share_queues_between_handles_of_one_family() -> None:
    # Given
    queues = InMemoryQueues(lambda: 0.0)
    sender = queues.queue("jobs")
    # When
    sender.send("hello")
    receiver = queues.queue("jobs")
    # Then
    assert [m.body for m in receiver.receive()] == ["hello"]
