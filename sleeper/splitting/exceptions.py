"""Errors of partition splitting."""

from __future__ import annotations

from sleeper.core import SleeperError

__all__ = ["MissingSketchesError", "SplittingError", "UntrackedFileError"]


class SplittingError(SleeperError):
    """A partition split job could not be run."""


class UntrackedFileError(SplittingError):
    """A split job names a file the table does not track (it was garbage collected, or the job was forged)."""


class MissingSketchesError(SplittingError):
    """A file named by a split job has no readable sketches file, so no split point can be found (as in Sleeper, the
    job fails and is retried, then dead-lettered)."""
