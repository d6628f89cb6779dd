"""What the benchmarks measure of their own process, in one place: its peak resident set size."""

from __future__ import annotations

import resource
from pathlib import Path

__all__ = ["peak_rss_bytes"]


def peak_rss_bytes() -> int:
    """The process's peak RSS in bytes: ``VmHWM`` where there is ``/proc`` (``ru_maxrss`` is inherited across fork and
    exec, so a child would report the parent's peak), else ``ru_maxrss``."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
