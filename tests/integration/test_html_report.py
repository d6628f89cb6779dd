"""``sleeper report html`` seen in a headless browser: a local table of 3 leaves, ingested by two jobs and compacted
once, is written as a page by the command line; Chromium takes a screenshot of it (not blank: the charts' colours are
on it) and dumps its DOM, which holds one element per partition, per leaf and per job run of ``table.inspect``.

Skipped when no Chromium is installed (Debian: ``apt-get install chromium``; ``.ci/run`` installs it)."""

from __future__ import annotations

import shutil
import struct
import subprocess
import zlib
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import sleeper
from sleeper.api.instance import Instance
from sleeper.cli.main import run
from sleeper.core.schema import Field, PrimitiveType, Schema

pytestmark = [pytest.mark.integration, pytest.mark.slow]

SCHEMA = Schema.of(row_keys=[Field("key", PrimitiveType.LONG)], values=[Field("value", PrimitiveType.STRING)])
BROWSERS = ("chromium", "chromium-browser", "google-chrome")
WINDOW = (1280, 1600)
INGEST_BLUE = (0x4C, 0x78, 0xA8)
COMPACTION_ORANGE = (0xE8, 0x87, 0x1A)


@pytest.fixture
def browser() -> str:
    """The path of a Chromium to run headless, or the test skips (before building its table)."""
    found = next((path for name in BROWSERS if (path := shutil.which(name))), None)
    if found is None:
        pytest.skip(f"no headless browser: none of {', '.join(BROWSERS)} is on PATH (apt-get install chromium)")
    return found


def _headless(browser: str, profile: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            browser,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            f"--user-data-dir={profile}",
            f"--window-size={WINDOW[0]},{WINDOW[1]}",
            *args,
        ],
        capture_output=True,
        text=True,
        timeout=180,
        check=True,
    )


@pytest.fixture
def instance(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Instance:
    """A table ``t`` of 100 rows on 3 leaves, ingested by jobs ``job-0`` and ``job-1``, compacted once."""
    created = sleeper.create_instance(tmp_path / "instance")
    created.create_table("t", SCHEMA, split_points=[30, 70])
    for job in range(2):
        keys = list(range(job, 100, 2))
        pq.write_table(
            pa.table({"key": pa.array(keys, pa.int64()), "value": [f"v{k}" for k in keys]}), tmp_path / f"{job}.parquet"
        )
        created.ingest_files("t", [str(tmp_path / f"{job}.parquet")], job_id=f"job-{job}")
    created.compact_now("t", compact_all=True)
    monkeypatch.setenv("SLEEPER_INSTANCE", str(tmp_path / "instance"))
    return created


class _Classes(HTMLParser):
    """The attributes of every element of a page, by each class it has."""

    def __init__(self) -> None:
        super().__init__()
        self.by_class: dict[str, list[dict[str, str]]] = {}
        self.ids: set[str] = set()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = {k: v or "" for k, v in attrs}
        self.ids.update([values["id"]] if "id" in values else [])
        for name in values.get("class", "").split():
            self.by_class.setdefault(name, []).append(values)


def _pixels(png: bytes) -> np.ndarray:
    """The RGB(A) pixels of an 8-bit truecolour PNG, as a (height, width, channels) array (a small reader, enough for
    Chromium's screenshots)."""
    assert png[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, header = 8, b"", (0, 0, 0, 0)
    while pos < len(png):
        (length,) = struct.unpack(">I", png[pos : pos + 4])
        kind, body = png[pos + 4 : pos + 8], png[pos + 8 : pos + 8 + length]
        pos += 12 + length
        if kind == b"IHDR":
            header = struct.unpack(">IIBB", body[:10])
        elif kind == b"IDAT":
            idat += body
    width, height, depth, colour = header
    assert depth == 8 and colour in (2, 6), f"unexpected PNG format: depth {depth}, colour type {colour}"
    channels = 3 if colour == 2 else 4
    raw = np.frombuffer(zlib.decompress(idat), np.uint8).reshape(height, 1 + width * channels)
    out = np.zeros((height, width * channels), np.uint8)
    previous = np.zeros(width * channels, np.uint8)
    for y in range(height):
        line, kind = raw[y, 1:], raw[y, 0]
        if kind == 0:
            row = line.copy()
        elif kind == 2:
            row = line + previous
        elif kind == 1:
            row = np.cumsum(line.reshape(width, channels), axis=0, dtype=np.uint8).reshape(-1)
        else:
            row = _unfilter_sequential(line, previous, channels, average=kind == 3)
        out[y], previous = row, row
    return out.reshape(height, width, channels)


def _unfilter_sequential(line: np.ndarray, previous: np.ndarray, channels: int, *, average: bool) -> np.ndarray:
    row = [0] * len(line)
    above = previous.tolist()
    for i, value in enumerate(line.tolist()):
        left = row[i - channels] if i >= channels else 0
        up = above[i]
        if average:
            row[i] = (value + (left + up) // 2) & 0xFF
            continue
        corner = above[i - channels] if i >= channels else 0
        p = left + up - corner
        pa_, pb, pc = abs(p - left), abs(p - up), abs(p - corner)
        predictor = left if pa_ <= pb and pa_ <= pc else up if pb <= pc else corner
        row[i] = (value + predictor) & 0xFF
    return np.array(row, np.uint8)


def _has_colour(pixels: np.ndarray, colour: tuple[int, int, int]) -> bool:
    distance = np.abs(pixels[:, :, :3].astype(np.int16) - np.array(colour, np.int16)).max(axis=2)
    return bool((distance <= 6).any())


def should_show_the_partition_tree_file_sizes_and_job_runs_in_a_browser(
    browser: str, instance: Instance, tmp_path: Path
) -> None:
    table = instance.table("t")
    partitions, jobs = table.inspect.partitions(), table.inspect.jobs()
    # Given the table's report, written by the command line
    page = tmp_path / "report.html"
    assert run(["report", "html", "t", "-o", str(page)]) == 0
    # When a headless browser shows it and dumps what it built
    shot = tmp_path / "shot.png"
    _headless(browser, tmp_path / "profile-shot", f"--screenshot={shot}", page.as_uri())
    dom = _headless(browser, tmp_path / "profile-dom", "--dump-dom", page.as_uri()).stdout
    # Then the screenshot is the window's size and not blank: the page's text and both kinds of job run are on it
    pixels = _pixels(shot.read_bytes())
    assert pixels.shape[:2] == (WINDOW[1], WINDOW[0])
    non_white = (pixels[:, :, :3] < 240).any(axis=2).mean()
    assert non_white > 0.02, f"only {non_white:.2%} of the screenshot is not white"
    assert _has_colour(pixels, INGEST_BLUE) and _has_colour(pixels, COMPACTION_ORANGE)
    # And the DOM holds one partition per partition, one bar per leaf and one bar per job run of table.inspect
    elements = _Classes()
    elements.feed(dom)
    assert {"partition-tree", "file-sizes", "job-timeline"} <= elements.ids
    drawn = elements.by_class.get("partition", [])
    assert sorted(p["data-partition-id"] for p in drawn) == sorted(partitions["partition_id"].to_pylist())
    leaves = partitions.filter(partitions["is_leaf"])
    bars = elements.by_class.get("leaf-bar", [])
    assert leaves.num_rows == 3
    assert sorted(b["data-partition-id"] for b in bars) == sorted(leaves["partition_id"].to_pylist())
    assert sum(int(b["data-rows"]) for b in bars) == 100
    runs = elements.by_class.get("job-run", [])
    assert jobs.num_rows >= 3  # the two ingest jobs and at least one compaction
    assert sorted((r["data-kind"], r["data-job-id"]) for r in runs) == sorted(
        zip(jobs["kind"].to_pylist(), jobs["job_id"].to_pylist(), strict=True)
    )


def should_write_the_page_to_standard_output_or_say_why_it_cannot_write_it(
    instance: Instance, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given the table's report written to standard output
    assert run(["report", "html", "t", "-o", "-"]) == 0
    # Then standard output is the page and nothing else
    out = capsys.readouterr().out
    assert out.startswith("<!DOCTYPE html>") and out.rstrip().endswith("</html>")
    # And a file that cannot be written is one error line naming the option and the path, with nothing left behind
    target = tmp_path / "no-such-directory" / "report.html"
    assert run(["report", "html", "t", "-o", str(target)]) == 1
    err = capsys.readouterr().err
    assert err == f"error: --output: cannot write {target}: No such file or directory\n"
    assert not target.parent.exists()
