"""How this process allocates the memory that sorting, merging and Parquet reading and writing churn through.

A merge or a sort allocates and frees the same few MB over and over: numpy temporaries for each round's order (from
the C library's ``malloc``) and Arrow buffers for each batch taken, read or encoded (from Arrow's default memory
pool). :func:`tune_memory` makes two process-wide settings that keep that memory in the process instead of
handing it back to the system and faulting it in again on the next round:

- glibc keeps freed memory at the top of its heap (``mallopt(M_TOP_PAD)``).
- Arrow allocates from the C library too (its ``system`` pool), instead of the mimalloc that pyarrow's wheels
  bundle. On Linux, mimalloc reserves its arenas with transparent huge pages allowed and gives freed pages back
  after a few milliseconds, so later allocations fault in and zero whole 2 MB pages again. In a compaction of 10M
  int64-key rows that cost up to a third of the CPU time, varying from run to run; with the C library's allocator
  the same job took 0.55-0.87x the time, with a lower peak RSS (docs/performance.md, "Arrow's memory pool").

The choice of Arrow's pool is made best when the process starts: Arrow's C++ library takes its own default pool
from ``ARROW_DEFAULT_MEMORY_POOL`` when pyarrow is imported, and that pool serves every allocation made without an
explicit pool (file reads among them). Sleeper's images and the ``sleeper`` command start every process with it
set to ``system`` (:data:`sleeper.core.IMAGE_ENVIRONMENT`). :func:`pyarrow.set_memory_pool`, which is all a running
process can do, reaches only the allocations pyarrow's Python layer makes: in the same compaction (5 fresh
processes each) it took 1.29-1.79 s (median 1.40), against 1.19-1.28 s (1.25) with the variable and 1.33-2.65 s
(2.35) with mimalloc.

DataFusion (the ``DATAFUSION`` engine's worker processes and queries) allocates with a mimalloc of its own, which
suffers the same way and is not Arrow's pool: ``MIMALLOC_ALLOW_THP=0``, the other variable of
:data:`sleeper.core.IMAGE_ENVIRONMENT`, keeps it off transparent huge pages. DataFusion's bare merge of 10M int64-key
rows took 0.88-0.99 s with it against 1.01-2.04 s without, and the DATAFUSION engine's compaction 2.26-2.28 s against
2.44-2.68 s.

:func:`tune_memory_once` applies the defaults once per process, in processes started without the variable (a
library user's Python, a test's). It runs before the process opens its first file
(:func:`sleeper.io.filesystem.open_input`, :func:`~sleeper.io.filesystem.open_output`) or sorts
(:class:`sleeper.io.sort.KeyOrderer`), and so before the Parquet readers and writers that do most of the
allocating are created: each takes the default pool it is created with, and switching only at the first merge
round, after the job's files were opened, gained little over mimalloc alone (1.99-2.23 s). A process that chose
for itself keeps its choice: an earlier call to :func:`tune_memory` (``tune_memory(system_allocator=False)`` keeps
mimalloc), or a pool other than mimalloc already in place (``ARROW_DEFAULT_MEMORY_POOL=jemalloc`` or ``system``), is
never overridden.
"""

from __future__ import annotations

import ctypes
import platform
from dataclasses import dataclass

import pyarrow as pa

__all__ = ["MemoryTuning", "tune_memory", "tune_memory_once"]

_M_TOP_PAD = -2
"""glibc's ``mallopt`` parameter for the memory kept at the top of the heap when it grows or shrinks."""
DEFAULT_TOP_PAD = 64 * 1024 * 1024
"""The memory glibc keeps at the top of its heap once tuned: 64 MiB."""
_tuned = False


@dataclass(frozen=True, slots=True)
class MemoryTuning:
    """What :func:`tune_memory` did."""

    top_pad_set: bool
    """True if glibc accepted the top pad (False where the C library is not glibc)."""
    arrow_pool: str
    """The backend of Arrow's default memory pool afterwards: ``system``, ``mimalloc`` or ``jemalloc``."""


def tune_memory(*, top_pad_bytes: int = DEFAULT_TOP_PAD, system_allocator: bool = True) -> MemoryTuning:
    """Sets how this process allocates memory for sorting, merging and Parquet reading and writing.

    Both settings are process-wide and replace what :func:`tune_memory_once` would do.

    - glibc's malloc keeps ``top_pad_bytes`` of freed memory at the top of its heap instead of returning it to the
      system at once. Sorting and merging allocate and free a few MB of temporaries per batch or round; with glibc's
      default (128 KiB) the next round page-faults that memory in again, which cost a string-key merge 40% of its
      time and an int-key merge 20%. The price is at most that much more resident memory. Nothing happens where the
      C library is not glibc.
    - If ``system_allocator`` is true and Arrow's default pool is pyarrow's bundled mimalloc, the C library's
      allocator becomes Arrow's default pool (see the module docstring for why). A pool something else chose (not
      mimalloc) is left alone. Buffers already allocated stay with the pool that allocated them.

    Args:
        top_pad_bytes: The memory glibc keeps, and requests beyond each need when the heap grows.
        system_allocator: False to leave Arrow's default pool as it is.

    Returns:
        What was set.
    """
    global _tuned
    _tuned = True
    if system_allocator and pa.default_memory_pool().backend_name == "mimalloc":
        pa.set_memory_pool(pa.system_memory_pool())
    return MemoryTuning(top_pad_set=_set_top_pad(top_pad_bytes), arrow_pool=pa.default_memory_pool().backend_name)


def tune_memory_once() -> None:
    """Calls :func:`tune_memory` with its defaults, unless it was called before in this process."""
    if not _tuned:
        tune_memory()


def _set_top_pad(top_pad_bytes: int) -> bool:
    if platform.system() != "Linux" or platform.libc_ver()[0] != "glibc":
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    return bool(mallopt(_M_TOP_PAD, top_pad_bytes))
