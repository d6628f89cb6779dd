from __future__ import annotations

import os
import platform
import subprocess
import sys

import pytest

_REPORT = """
import sys
import pyarrow as pa
from sleeper.io import tune_memory
from sleeper.io.sort import sort_indices
before = pa.default_memory_pool().backend_name
if sys.argv[1] == "keep":
    tune_memory(system_allocator=False)
sort_indices(pa.table({"k": pa.array(["b", "a", "c"] * 1000)}), ["k"])
tuning = tune_memory(system_allocator=False)
print(before, tuning.arrow_pool, tuning.top_pad_set)
"""


def _around_a_sort(choice: str = "", pool_variable: str | None = None) -> tuple[str, str, bool]:
    env = {key: value for key, value in os.environ.items() if key != "ARROW_DEFAULT_MEMORY_POOL"}
    if pool_variable is not None:
        env["ARROW_DEFAULT_MEMORY_POOL"] = pool_variable
    done = subprocess.run(
        [sys.executable, "-c", _REPORT, choice or "default"], env=env, capture_output=True, text=True, check=True
    )
    before, after, top_pad_set = done.stdout.split()
    return before, after, top_pad_set == "True"


def should_make_the_system_allocator_arrows_pool_on_the_first_sort() -> None:
    # Given a process that has not chosen how it allocates
    # When it sorts
    before, after, top_pad_set = _around_a_sort()
    # Then Arrow allocates from the C library from then on, where pyarrow's own default was mimalloc
    if before != "mimalloc":
        pytest.skip(f"pyarrow's default pool here is {before}, which is left alone")
    assert after == "system"
    # And glibc keeps its heap's top exactly where glibc is the C library
    assert top_pad_set == (platform.system() == "Linux" and platform.libc_ver()[0] == "glibc")


def should_keep_mimalloc_when_the_process_chose_it() -> None:
    # Given a process that chose to keep Arrow's pool before sorting
    # When it sorts
    before, after, _ = _around_a_sort("keep")
    # Then its pool stays
    assert after == before


@pytest.mark.parametrize("chosen", ["jemalloc"])
def should_keep_the_pool_the_environment_chose(chosen: str) -> None:
    # Given a process whose owner chose Arrow's pool in the environment
    # When it sorts
    before, after, _ = _around_a_sort(pool_variable=chosen)
    # Then the choice stands
    if before != chosen:
        pytest.skip(f"this pyarrow has no {chosen} pool")
    assert after == chosen
