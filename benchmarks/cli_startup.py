"""Benchmark: how long the ``sleeper`` command takes to start, for ``sleeper --version`` and ``sleeper --help``.

The package's bytecode is compiled first (as pip compiles an installed package). Each case runs in a fresh Python
subprocess (``python -c "from sleeper.cli.main import main; main()" ARGS``, what the installed ``sleeper`` script
runs), ``--runs`` times (default 15), interleaved with the baseline: ``python -c pass`` in
the same interpreter, which is the cost of starting Python at all. Reported per case: the median and the minimum
wall seconds, and the median over the baseline's. Also the load average when the run started and ended (1 minute),
since the figures scale with the machine's load; and whether pyarrow was imported by ``--version`` (it should not
be: the commands import what they use when they run).

The last line printed is one JSON object with every figure.

Usage: ``.venv/bin/python benchmarks/cli_startup.py [--runs 15]``.
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

CASES = {
    "baseline_python": ["-c", "pass"],
    "version": ["-c", "from sleeper.cli.main import main; main()", "--version"],
    "help": ["-c", "from sleeper.cli.main import main; main()", "--help"],
}


def _once(args: list[str]) -> float:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "100"}
    start = time.perf_counter()
    subprocess.run([sys.executable, *args], check=True, stdout=subprocess.DEVNULL, env=env, cwd=ROOT)
    return time.perf_counter() - start


def _imports_pyarrow() -> bool:
    code = (
        "import sys\nfrom sleeper.cli.main import run\nrun(['--version'])\n"
        "print('pyarrow' in sys.modules, file=sys.stderr)"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        check=True,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        cwd=ROOT,
    )
    return done.stderr.strip().splitlines()[-1] == "True"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    load_start = os.getloadavg()[0]
    # The package's bytecode is compiled first, as an installed command's is (pip compiles what it installs): the
    # first run would otherwise be the only one to write it, and with PYTHONDONTWRITEBYTECODE set none would.
    compileall.compile_dir(ROOT / "sleeper", quiet=1)
    for case_args in CASES.values():  # warm the file cache
        _once(case_args)
    seconds: dict[str, list[float]] = {name: [] for name in CASES}
    for _ in range(args.runs):
        for name, case_args in CASES.items():
            seconds[name].append(_once(case_args))
    baseline = statistics.median(seconds["baseline_python"])
    result: dict[str, object] = {"runs": args.runs, "load_average_start": load_start}
    for name, values in seconds.items():
        median = statistics.median(values)
        result[name] = {"median_seconds": round(median, 4), "min_seconds": round(min(values), 4)}
        if name != "baseline_python":
            result[name]["median_over_baseline"] = round(median / baseline, 2)  # type: ignore[index]
        print(f"{name:16} median {median:.3f} s, min {min(values):.3f} s")
    result["version_imports_pyarrow"] = _imports_pyarrow()
    result["load_average_end"] = os.getloadavg()[0]
    print(json.dumps(result))


if __name__ == "__main__":
    main()
