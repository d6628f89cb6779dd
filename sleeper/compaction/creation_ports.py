"""Ports of compaction job creation (see :mod:`sleeper.statestore.tables`)."""

from __future__ import annotations

from sleeper.statestore.tables import SleeperTable

__all__ = ["JobCreationTable"]

JobCreationTable = SleeperTable
"""A table compaction jobs are created for."""
