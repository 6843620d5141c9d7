"""Bar charts with 95% bootstrap intervals (thesis Figures 4.1–4.12), saved reproducibly.

Matplotlib's Agg backend; PNG without the software tag, SVG with a fixed hash salt and no date,
so the same data give byte-identical files on the same matplotlib version.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from .stats import Estimate  # noqa: E402


@dataclass(frozen=True)
class Bar:
    panel: str  # one subplot per panel (e.g. "a", "A")
    x: str  # category on the axis
    series: str  # one colour per series (e.g. the model)
    estimate: Estimate


def bar_chart(
    bars: Sequence[Bar],
    title: str,
    path_stem: Path,
    chance: dict[str, float] | None = None,
    ylabel: str = "accuracy",
) -> list[Path]:
    """Grouped bars with interval whiskers; dashed line at chance per panel. PNG and SVG."""
    panels = list(dict.fromkeys(b.panel for b in bars))
    xs = list(dict.fromkeys(b.x for b in bars))
    series = list(dict.fromkeys(b.series for b in bars))
    width = 0.8 / max(len(series), 1)
    bars_per_panel = len(xs) * max(len(series), 1)
    if bars_per_panel > 12:  # many tasks: panels one above the other, each as wide as it needs
        shape, size = (len(panels), 1), (max(6.0, 0.28 * bars_per_panel + 1.5), 3.4 * len(panels))
    else:
        shape, size = (
            (1, len(panels)),
            ((max(4.0, 0.55 * bars_per_panel + 1.5)) * len(panels) ** 0.5, 3.6),
        )
    figure, axes = plt.subplots(*shape, figsize=size, squeeze=False)
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for axis, panel in zip(axes.flat, panels, strict=True):
        for s_index, name in enumerate(series):
            chosen = {b.x: b.estimate for b in bars if b.panel == panel and b.series == name}
            positions, heights, lows, highs = [], [], [], []
            for x_index, x in enumerate(xs):
                e = chosen.get(x)
                if e is None or math.isnan(e.value):
                    continue
                positions.append(x_index - 0.4 + width * (s_index + 0.5))
                heights.append(e.value)
                lows.append(0 if math.isnan(e.low) else e.value - e.low)
                highs.append(0 if math.isnan(e.high) else e.high - e.value)
            axis.bar(
                positions,
                heights,
                width * 0.95,
                yerr=[lows, highs],
                capsize=2,
                label=name,
                color=colours[s_index % len(colours)],
            )
        if chance and panel in chance:
            axis.axhline(chance[panel], color="0.3", linestyle="--", linewidth=0.8)
        axis.set_title(panel)
        axis.set_xticks(range(len(xs)))
        axis.set_xticklabels(xs, rotation=30, ha="right", fontsize=8)
        axis.set_ylim(0, 1)
        axis.set_ylabel(ylabel)
    if len(series) > 1:
        axes.flat[len(panels) - 1].legend(fontsize=7, loc="upper right")
    figure.suptitle(title, fontsize=10)
    figure.tight_layout()
    return save(figure, path_stem)


def save(figure: plt.Figure, path_stem: Path) -> list[Path]:
    path_stem.parent.mkdir(parents=True, exist_ok=True)
    png, svg = path_stem.with_suffix(".png"), path_stem.with_suffix(".svg")
    figure.savefig(png, dpi=110, metadata={"Software": None})
    with plt.rc_context({"svg.hashsalt": "wsc-tasks"}):
        figure.savefig(svg, metadata={"Date": None, "Creator": None})
    plt.close(figure)
    return [png, svg]
