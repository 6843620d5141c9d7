"""Forest plots with 95% bootstrap intervals (thesis Figures 4.1–4.12), saved reproducibly.

One row per task (or method, perturbation…), one marker per model, slightly offset so the models'
intervals do not overlap, a dashed line at chance. Rows may be grouped (a task's role): each group
opens with its name in bold, after a rule. A chance model's markers are hollow, its whiskers
dashed, so that it is told apart from a model it overlaps. A panel without a chance line (a share
such as consistency) is scaled to its data when they all lie below 0.6, instead of filling a tenth
of a 0–1 axis. The width is fixed (never wider than a page); the height grows with the rows. Each
model keeps its colour and marker in every figure (``palette``). Labels are text: no math
(``$``) is parsed in them and their hidden characters are shown escaped (``markup.visible``).
Matplotlib's Agg backend; PNG without the software tag, SVG with its text as text (a page can
measure and search it; it stays sharp when zoomed), a fixed hash salt and no date, so the same
data give byte-identical files on the same matplotlib version.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import matplotlib

from wsc_tasks.markup import visible
from wsc_tasks.metrics.stats import Estimate

if TYPE_CHECKING:
    from matplotlib.figure import Figure
    from matplotlib.typing import ColorType

matplotlib.use("Agg")  # pyplot itself is imported where a figure is drawn: it costs ~0.6 s

DPI = 100
MAX_WIDTH = 19.5  # inches: under 2,000 pixels at DPI
PANEL_WIDTH = 4.0
FONT = 10
SPREAD = 0.08  # inches a row grows by per model whose markers it holds side by side
# the narrow layout (a phone's page): this wide, its panels one under another, each with its row
# labels, long labels and the title wrapped; on a page 400 px wide its text stays 13 px high
NARROW_WIDTH = 4.0
NARROW_LABEL = 1.75  # inches at most for the row labels, wrapped to fit
NARROW_GAP = 0.8  # inches between stacked panels: the x label and the next panel's title
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
    group: str = ""  # rows of a group (a task's role) together, under its name


@dataclass(frozen=True)
class Style:
    colour: ColorType
    marker: str
    hollow: bool = False  # a chance model: hollow marker, dashed whiskers


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
    narrow: bool = False,
) -> list[Path]:
    """Rows of point estimates with interval whiskers, one panel per ``Bar.panel``. PNG and SVG.
    ``names``: a series' name in the legend, where it is not its label (a chance model's: its
    markers are hollow). ``narrow``: the same figure laid out for a phone (``NARROW_WIDTH``
    wide, the panels stacked), written as ``<stem>_narrow.svg`` only: a page shows it where the
    wide one would have to shrink its text below 12 px."""
    import matplotlib.pyplot as plt

    with plt.rc_context({"text.parse_math": False}):
        return _forest(bars, title, path_stem, chance, xlabel, styles, names, narrow)


def wrap(text: str, width: int) -> str:
    """``text`` in lines of at most ``width`` characters where it can break (after ``_``, ``-``
    or a space); a longer word stays whole."""
    lines: list[str] = []
    for word in re.findall(r"[^_\- ]+[_\- ]*|[_\- ]+", text):
        if lines and len(lines[-1]) + len(word.rstrip(" ")) <= width:
            lines[-1] += word
        else:
            lines.append(word)
    return "\n".join(line.rstrip(" ") for line in lines) or text


def _layout(bars: Sequence[Bar]) -> tuple[list[str], list[str]]:
    """The rows top to bottom, with a group's name (a row of its own, ``GROUP`` + name) before
    its first row when the bars are grouped."""
    rows = list(dict.fromkeys(b.x for b in bars))
    groups = {b.x: b.group for b in bars}
    if not any(groups.values()):
        return rows, rows
    order = list(dict.fromkeys(groups[r] for r in rows))
    laid: list[str] = []
    for group in order:
        laid += [GROUP + group, *[r for r in rows if groups[r] == group]]
    return [r for r in laid if not r.startswith(GROUP)], laid


GROUP = "\0"  # marks a group's name among the rows


def _upper(values: list[float]) -> float:
    """The right end of a share's axis: 1, or the data's maximum rounded up to a tenth (plus a
    margin) when every value lies below 0.6."""
    top = max(values, default=1.0)
    return 1.0 if top >= 0.6 else math.ceil(top * 10 + 0.5) / 10


def _forest(
    bars: Sequence[Bar],
    title: str,
    path_stem: Path,
    chance: dict[str, float] | None,
    xlabel: str,
    styles: dict[str, Style] | None,
    names: dict[str, str] | None,
    narrow: bool = False,
) -> list[Path]:
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D

    panels = list(dict.fromkeys(b.panel for b in bars))
    data_rows, laid = _layout(bars)
    series = list(dict.fromkeys(b.series for b in bars))
    styles = {**palette(series), **(styles or {})}
    found = {(b.panel, b.x, b.series): b.estimate for b in bars}
    place = {row: i for i, row in enumerate(laid)}
    rows = laid
    label_width = min(0.4 + 0.075 * max((len(r) for r in rows), default=4), 5.0)
    labels = [visible(r.removeprefix(GROUP)) for r in rows]
    if narrow:
        label_width = min(label_width, NARROW_LABEL)
        labels = [wrap(label, int((label_width - 0.4) / 0.075)) for label in labels]
        width = NARROW_WIDTH
        title = wrap(visible(title), int(width / 0.095))
    else:
        width = min(label_width + PANEL_WIDTH * max(len(panels), 1) + 0.3, MAX_WIDTH)
        title = visible(title)
    alone = all(len({b.series for b in bars if b.x == row}) <= 1 for row in data_rows)
    row_height = 0.12 + (0.13 if alone else SPREAD * len(series))  # room for a row's markers
    lines = max((label.count("\n") + 1 for label in labels), default=1)
    row_height = max(row_height, 0.05 + 0.17 * lines)  # and for its label's lines
    entries = len(series) + (1 if chance and any(p in chance for p in panels) else 0)
    shown = [visible((names or {}).get(s, s)) for s in series]
    columns = max(1, min(entries, int(width / (0.6 + 0.075 * max(map(len, shown), default=6)))))
    titled = 0.22 * title.count("\n")
    legend = (
        (0.21 * math.ceil(entries / columns) + 0.1)
        if narrow
        else 0.25 * math.ceil(entries / columns)
    )
    header, footer = 0.75 + titled + legend, 0.6
    stacked = len(panels) if narrow else 1
    panel_height = row_height * max(len(rows), 1)
    height = header + footer + stacked * panel_height + (stacked - 1) * NARROW_GAP
    grid = (max(stacked, 1), 1) if narrow else (1, max(len(panels), 1))
    figure, axes = plt.subplots(*grid, figsize=(width, height), squeeze=False)
    offsets = (
        [0.0] * len(series)
        if len(series) == 1 or alone  # one model a row (the findings' figure): centred
        else [-0.4 + 0.8 * i / (len(series) - 1) for i in range(len(series))]
    )
    for axis, panel in zip(axes.flat, panels, strict=True):
        for stripe in [place[r] for r in data_rows][::2]:
            axis.axhspan(stripe - 0.5, stripe + 0.5, color="0.94", zorder=0, linewidth=0)
        for i, row in enumerate(rows):
            if row.startswith(GROUP) and i:
                axis.axhline(i - 0.5, color="0.45", linewidth=0.8, zorder=1)
        if chance and panel in chance:
            axis.axvline(chance[panel], color="0.35", linestyle="--", linewidth=1, zorder=1)
        for s_index, name in enumerate(series):
            ys, xs, lows, highs = [], [], [], []
            for row in data_rows:
                r_index = place[row]
                e = found.get((panel, row, name))
                if e is None or math.isnan(e.value):
                    continue
                ys.append(r_index + offsets[s_index])
                xs.append(e.value)
                lows.append(0 if math.isnan(e.low) else max(e.value - e.low, 0))
                highs.append(0 if math.isnan(e.high) else max(e.high - e.value, 0))
            style = styles[name]
            _, _, whiskers = axis.errorbar(
                xs, ys, xerr=[lows, highs], fmt=style.marker, color=style.colour,
                markersize=4.5, elinewidth=1.3, capsize=0, zorder=2,
                markerfacecolor="white" if style.hollow else style.colour,
            )  # fmt: skip
            if style.hollow:
                for line in whiskers:
                    line.set_linestyle((0, (3, 1.5)))
        axis.set_ylim(len(rows) - 0.5, -0.5)
        if chance and panel in chance:
            upper = 1.0
        else:
            ends = [
                e.value if math.isnan(e.high) else e.high for k, e in found.items() if k[0] == panel
            ]
            upper = _upper([v for v in ends if not math.isnan(v)])
        axis.set_xlim(-0.02 * upper, 1.02 * upper)
        step = 0.25 if upper == 1.0 else (0.1 if upper > 0.3 else 0.05)
        axis.set_xticks([round(step * i, 2) for i in range(int(round(upper / step)) + 1)])
        axis.tick_params(labelsize=FONT)
        axis.grid(axis="x", color="0.85", linewidth=0.6, zorder=0)
        axis.set_axisbelow(True)
        axis.set_title(PANEL_TITLES.get(panel, panel), fontsize=FONT + 1)
        axis.set_xlabel(xlabel, fontsize=FONT)
        axis.set_yticks(range(len(rows)))
        first = axis is axes.flat[0] or narrow  # stacked panels: each has its labels
        axis.set_yticklabels(labels if first else [], fontsize=FONT)
        if first:
            for tick, row in zip(axis.get_yticklabels(), rows, strict=True):
                if row.startswith(GROUP):
                    tick.set_fontweight("bold")
    handles = [
        Line2D(
            [],
            [],
            color=styles[s].colour,
            marker=styles[s].marker,
            linestyle="",
            label=name,
            markerfacecolor="white" if styles[s].hollow else styles[s].colour,
        )  # fmt: skip
        for s, name in zip(series, shown, strict=True)
    ]
    if chance and any(p in chance for p in panels):
        handles.append(Line2D([], [], color="0.35", linestyle="--", label="chance level"))
    figure.legend(
        handles=handles, loc="upper center", ncol=columns, fontsize=FONT,
        frameon=False, bbox_to_anchor=(0.5, 1 - (0.45 + titled) / height),
    )  # fmt: skip
    figure.suptitle(title, fontsize=FONT + 2, y=1 - 0.12 / height, va="top")
    figure.subplots_adjust(
        left=label_width / width,
        right=1 - (0.3 if narrow else 0.25) / width,
        top=1 - header / height,
        bottom=footer / height,
        wspace=0.08,
        hspace=NARROW_GAP / panel_height,
    )
    if narrow:
        return save(figure, path_stem.with_name(f"{path_stem.name}{NARROW}"), png=False)
    return save(figure, path_stem)


NARROW = "_narrow"  # the narrow layout's file: <stem>_narrow.svg


def save(figure: Figure, path_stem: Path, png: bool = True) -> list[Path]:
    import matplotlib.pyplot as plt

    path_stem.parent.mkdir(parents=True, exist_ok=True)
    raster, svg = path_stem.with_suffix(".png"), path_stem.with_suffix(".svg")
    if png:
        figure.savefig(raster, dpi=DPI, metadata={"Software": None})
    with plt.rc_context({"svg.hashsalt": "wsc-tasks", "svg.fonttype": "none"}):
        figure.savefig(svg, metadata={"Date": None, "Creator": None})
    plt.close(figure)
    return [raster, svg] if png else [svg]


def inline_svg(path: Path, prefix: str) -> str:
    """An SVG file as an element for an HTML page: no XML prologue, ids made unique by
    ``prefix`` (several matplotlib figures on one page would otherwise share clip-path ids),
    scaled to the page's width, up to its size and never below ``READABLE`` of it."""
    text = path.read_text(encoding="utf-8")
    text = text[text.index("<svg") :]
    text = re.sub(r'\bid="', f'id="{prefix}-', text)
    text = re.sub(r"url\(#", f"url(#{prefix}-", text)
    text = re.sub(r'href="#', f'href="#{prefix}-', text)
    match = re.search(r'<svg([^>]*?) width="([\d.]+)pt" height="[^"]*"', text)
    if match is None:
        return text
    points = float(match[2])
    style = f"max-width: {match[2]}pt; min-width: {smallest(points)}px"
    return text.replace(match[0], f'<svg{match[1]} class="figure" style="{style}"', 1)


def smallest(points: float) -> int:
    """The least width, in CSS pixels, a figure ``points`` wide is shown at on a page."""
    return math.ceil(points * READABLE)


# the least a figure is scaled to on a page, in CSS pixels per point of its width: its smallest
# text (FONT points) is then 12 px high (a narrower page shows the narrow layout instead)
READABLE = 12 / FONT
