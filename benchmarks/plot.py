"""Drawing a benchmark's figures against size in a PNG, in one place for every benchmark with a ``--plot`` option.

matplotlib is not one of the project's dependencies: install it into the virtualenv to draw
(``.venv/bin/pip install matplotlib``); without it a benchmark asked to plot stops with that advice before it
measures anything (:func:`require_matplotlib`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

__all__ = ["Panel", "Series", "plot_panels", "require_matplotlib"]


@dataclass(frozen=True)
class Series:
    """One line of a panel: a label and its points (a single point is drawn as a marker)."""

    label: str
    xs: Sequence[float]
    ys: Sequence[float]


@dataclass(frozen=True)
class Panel:
    """One chart: its title, axis labels and lines."""

    title: str
    xlabel: str
    ylabel: str
    series: list[Series] = field(default_factory=list)


def require_matplotlib() -> None:
    """Stops the program with a message saying how to install matplotlib, if it is not installed."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise SystemExit(
            "--plot needs matplotlib, which is not installed: run .venv/bin/pip install matplotlib"
        ) from None


def plot_panels(path: str, panels: Sequence[Panel]) -> None:
    """Writes the panels side by side (up to three a row) to a PNG at ``path``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    columns = 2 if len(panels) == 4 else min(3, len(panels))
    rows = -(-len(panels) // columns)
    fig, axes = plt.subplots(rows, columns, figsize=(6 * columns, 4.5 * rows), squeeze=False)
    for ax, panel in zip(axes.flat, panels, strict=False):
        for series in panel.series:
            ax.plot(list(series.xs), list(series.ys), marker="o", label=series.label)
        ax.set_title(panel.title)
        ax.set_xlabel(panel.xlabel)
        ax.set_ylabel(panel.ylabel)
        ax.set_ylim(bottom=0)
        ax.grid(True, alpha=0.3)
        if panel.series:
            ax.legend(fontsize=8)
    for ax in list(axes.flat)[len(panels) :]:
        ax.set_visible(False)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
