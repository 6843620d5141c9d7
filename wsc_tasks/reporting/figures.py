"""Forest plots with 95% bootstrap intervals (thesis Figures 4.1–4.12), saved reproducibly.

One row per task (or method, perturbation…), one marker per model, slightly offset so the models'
intervals do not overlap, a dashed line at chance. The width is fixed (never wider than a page);
the height grows with the rows. Each model keeps its colour and marker in every figure
(``palette``). Matplotlib's Agg backend; PNG without the software tag, SVG with a fixed hash salt
and no date, so the same data give byte-identical files on the same matplotlib version.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402

from wsc_tasks.metrics.stats import Estimate  # noqa: E402

if TYPE_CHECKING:
    from matplotlib.typing import ColorType

DPI = 100
MAX_WIDTH = 19.5  # inches: under 2,000 pixels at DPI
PANEL_WIDTH = 4.0
FONT = 10
# Okabe and Ito's colour-blind-safe palette (black last), then matplotlib's tab10
_OKABE = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#F0E442", "#000000")
COLOURS: tuple[ColorType, ...] = (*_OKABE, *matplotlib.color_sequences["tab10"])
MARKERS = ("o", "s", "D", "^", "v", "P", "X", "<", ">", "h")
PANEL_TITLES = {
    "a": "a: problem accuracy",
    "A": "A: schema accuracy",
    "C": "C: schema consistency",
    "C_a": "C_a: consistent schema accuracy",
}


@dataclass(frozen=True)
class Bar:
    panel: str  # one subplot per panel (e.g. "a", "A"), side by side
    x: str  # row label (task, method, …), top to bottom in first-seen order
    series: str  # one colour and marker per series (the model)
    estimate: Estimate


@dataclass(frozen=True)
class Style:
    colour: ColorType
    marker: str


def palette(labels: Sequence[str]) -> dict[str, Style]:
    """One colour and marker per model label, in the given order; the same in every figure."""
    return {
        label: Style(COLOURS[i % len(COLOURS)], MARKERS[i % len(MARKERS)])
        for i, label in enumerate(dict.fromkeys(labels))
    }


def forest(
    bars: Sequence[Bar],
    title: str,
    path_stem: Path,
    chance: dict[str, float] | None = None,
    xlabel: str = "accuracy",
    styles: dict[str, Style] | None = None,
    names: dict[str, str] | None = None,
) -> list[Path]:
    """Rows of point estimates with interval whiskers, one panel per ``Bar.panel``. PNG and SVG.
    ``names``: a series' name in the legend, where it is not its label (a chance model's)."""
    panels = list(dict.fromkeys(b.panel for b in bars))
    rows = list(dict.fromkeys(b.x for b in bars))
    series = list(dict.fromkeys(b.series for b in bars))
    styles = {**palette(series), **(styles or {})}
    found = {(b.panel, b.x, b.series): b.estimate for b in bars}
    label_width = min(0.4 + 0.075 * max((len(r) for r in rows), default=4), 5.0)
    width = min(label_width + PANEL_WIDTH * max(len(panels), 1) + 0.3, MAX_WIDTH)
    row_height = 0.12 + 0.13 * len(series)
    entries = len(series) + (1 if chance and any(p in chance for p in panels) else 0)
    shown = [(names or {}).get(s, s) for s in series]
    columns = max(1, min(entries, int(width / (0.6 + 0.075 * max(map(len, shown), default=6)))))
    header, footer = 0.75 + 0.25 * math.ceil(entries / columns), 0.6
    height = header + footer + row_height * max(len(rows), 1)
    figure, axes = plt.subplots(1, max(len(panels), 1), figsize=(width, height), squeeze=False)
    offsets = (
        [0.0]
        if len(series) == 1
        else [-0.35 + 0.7 * i / (len(series) - 1) for i in range(len(series))]
    )
    for axis, panel in zip(axes.flat, panels, strict=True):
        for stripe in range(0, len(rows), 2):
            axis.axhspan(stripe - 0.5, stripe + 0.5, color="0.94", zorder=0, linewidth=0)
        if chance and panel in chance:
            axis.axvline(chance[panel], color="0.35", linestyle="--", linewidth=1, zorder=1)
        for s_index, name in enumerate(series):
            ys, xs, lows, highs = [], [], [], []
            for r_index, row in enumerate(rows):
                e = found.get((panel, row, name))
                if e is None or math.isnan(e.value):
                    continue
                ys.append(r_index + offsets[s_index])
                xs.append(e.value)
                lows.append(0 if math.isnan(e.low) else max(e.value - e.low, 0))
                highs.append(0 if math.isnan(e.high) else max(e.high - e.value, 0))
            style = styles[name]
            axis.errorbar(
                xs, ys, xerr=[lows, highs], fmt=style.marker, color=style.colour,
                markersize=4.5, elinewidth=1.3, capsize=0, zorder=2,
            )  # fmt: skip
        axis.set_ylim(len(rows) - 0.5, -0.5)
        axis.set_xlim(-0.02, 1.02)
        axis.set_xticks([0, 0.25, 0.5, 0.75, 1])
        axis.tick_params(labelsize=FONT)
        axis.grid(axis="x", color="0.85", linewidth=0.6, zorder=0)
        axis.set_axisbelow(True)
        axis.set_title(PANEL_TITLES.get(panel, panel), fontsize=FONT + 1)
        axis.set_xlabel(xlabel, fontsize=FONT)
        axis.set_yticks(range(len(rows)))
        axis.set_yticklabels(rows if axis is axes.flat[0] else [], fontsize=FONT)
    handles = [
        Line2D([], [], color=styles[s].colour, marker=styles[s].marker, linestyle="", label=name)
        for s, name in zip(series, shown, strict=True)
    ]
    if chance and any(p in chance for p in panels):
        handles.append(Line2D([], [], color="0.35", linestyle="--", label="chance level"))
    figure.legend(
        handles=handles, loc="upper center", ncol=columns, fontsize=FONT,
        frameon=False, bbox_to_anchor=(0.5, 1 - 0.45 / height),
    )  # fmt: skip
    figure.suptitle(title, fontsize=FONT + 2, y=1 - 0.12 / height, va="top")
    figure.subplots_adjust(
        left=label_width / width,
        right=1 - 0.25 / width,
        top=1 - header / height,
        bottom=footer / height,
        wspace=0.08,
    )
    return save(figure, path_stem)


def save(figure: plt.Figure, path_stem: Path) -> list[Path]:
    path_stem.parent.mkdir(parents=True, exist_ok=True)
    png, svg = path_stem.with_suffix(".png"), path_stem.with_suffix(".svg")
    figure.savefig(png, dpi=DPI, metadata={"Software": None})
    with plt.rc_context({"svg.hashsalt": "wsc-tasks"}):
        figure.savefig(svg, metadata={"Date": None, "Creator": None})
    plt.close(figure)
    return [png, svg]


def inline_svg(path: Path, prefix: str) -> str:
    """An SVG file as an element for an HTML page: no XML prologue, ids made unique by
    ``prefix`` (several matplotlib figures on one page would otherwise share clip-path ids),
    scaled to the page's width."""
    text = path.read_text(encoding="utf-8")
    text = text[text.index("<svg") :]
    text = re.sub(r'\bid="', f'id="{prefix}-', text)
    text = re.sub(r"url\(#", f"url(#{prefix}-", text)
    text = re.sub(r'href="#', f'href="#{prefix}-', text)
    return re.sub(
        r'<svg([^>]*?) width="([^"]*)" height="[^"]*"',
        r'<svg\1 class="figure" style="max-width: \2"',
        text,
        count=1,
    )
