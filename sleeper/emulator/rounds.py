"""What a round of the emulator's pump did."""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["PumpRound"]


@dataclass(slots=True)
class PumpRound:
    """What one or more rounds of the pump did.

    Attributes:
        fired: The scheduled handlers run, in order.
        delivered: Messages (stream records) delivered per SQS (stream) handler.
        failed: Per SQS handler, messages reported failed or in a batch whose handler raised; per stream handler,
            batches that failed (each is read again from its failed record).
        tasks_started: The tasks, job runs and steps started as local processes.
        tasks_finished: Those that ended, with their exit codes.
        tasks_running: How many are still running.
    """

    fired: list[str] = field(default_factory=list)
    delivered: dict[str, int] = field(default_factory=dict)
    failed: dict[str, int] = field(default_factory=dict)
    tasks_started: list[str] = field(default_factory=list)
    tasks_finished: list[tuple[str, int]] = field(default_factory=list)
    tasks_running: int = 0

    @property
    def active(self) -> bool:
        """Whether anything was delivered, started or finished."""
        return bool(sum(self.delivered.values()) or self.tasks_started or self.tasks_finished)

    def add(self, other: PumpRound) -> None:
        """Adds another round's work to this one."""
        self.fired.extend(other.fired)
        for name, count in other.delivered.items():
            self.delivered[name] = self.delivered.get(name, 0) + count
        for name, count in other.failed.items():
            self.failed[name] = self.failed.get(name, 0) + count
        self.tasks_started.extend(other.tasks_started)
        self.tasks_finished.extend(other.tasks_finished)
        self.tasks_running = other.tasks_running
