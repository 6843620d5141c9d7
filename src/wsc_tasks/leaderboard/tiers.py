"""The leaderboard's ranks figure: each ranked model's rank with its 95% confidence sets, one row
a model, in tiers.

A tier opens with the best-ranked model not yet placed and holds every such model whose
simultaneous set reaches that model's rank (it may share it): the first tier is the set of
models that may be the best (the τ-best set for τ = 1), the next the models that may be the
best of the rest, and so on; tiers are told apart by their shade. Beyond ``TOP`` models only
the top rows are drawn (the first screen of a board of 1,000: the models that may be the best,
the first tiers), with how many are left to the table. The figure follows ``figures``: its
fonts, its reproducible files, labels shown as text.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from wsc_tasks.markup import visible
from wsc_tasks.metrics.ranks import RankSets
from wsc_tasks.report import figures

TOP = 15  # rows drawn; a larger board's other models are in the table
STEM = "leaderboard_ranks"  # <out>/leaderboard_ranks.png, .svg
SHADES = ("#0072B2", "#56B4E9")  # alternate tiers (Okabe and Ito's blues)


def tiers(sets: RankSets) -> np.ndarray:
    """The tier (1, 2, …) of each model, in the order of ``sets``."""
    order = np.lexsort((sets.simultaneous[:, 0], sets.rank))
    found = np.zeros(len(order), dtype=int)
    tier = 0
    for j in order:
        if found[j]:
            continue
        tier += 1
        lead = sets.rank[j]
        joins = (found == 0) & (sets.simultaneous[:, 0] <= lead)
        found[joins] = tier
    return found


def figure(labels: Sequence[str], sets: RankSets, out: Path, task: str) -> list[Path]:
    """``<out>/leaderboard_ranks.png`` and ``.svg``: the first ``TOP`` ranked models."""
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D
    from matplotlib.ticker import MaxNLocator

    total = len(labels)
    shown = min(total, TOP)
    tier = tiers(sets)
    names = [visible(label) for label in labels[:shown]]
    label_width = min(0.4 + 0.075 * max(map(len, names), default=4), 4.0)
    width = label_width + 5.0
    header, footer, row = 1.0, 0.75 if shown == total else 0.95, 0.2
    height = header + footer + row * max(shown, 1)
    fig, axis = plt.subplots(figsize=(width, height))
    ys = np.arange(shown)
    for y in ys:
        colour = SHADES[(tier[y] - 1) % len(SHADES)]
        low, high = sets.simultaneous[y]
        axis.plot([low - 0.4, high + 0.4], [y, y], color=colour, linewidth=7, alpha=0.35,
                  solid_capstyle="butt")  # fmt: skip
        low, high = sets.marginal[y]
        axis.plot([low - 0.4, high + 0.4], [y, y], color=colour, linewidth=2.2,
                  solid_capstyle="butt")  # fmt: skip
        axis.plot([sets.rank[y]], [y], "o", color="black", markersize=3.5)
        if y and tier[y] != tier[y - 1]:
            axis.axhline(y - 0.5, color="0.45", linewidth=0.8)
    limit = int(max(sets.simultaneous[:shown, 1].max(initial=1), shown))
    axis.set_xlim(0.3, limit + 0.7)
    axis.xaxis.set_major_locator(MaxNLocator(integer=True))
    axis.set_ylim(shown - 0.5, -0.5)
    axis.set_yticks(ys)
    axis.set_yticklabels([f"{n}  (tier {t})" for n, t in zip(names, tier, strict=False)],
                         fontsize=figures.FONT)  # fmt: skip
    axis.tick_params(labelsize=figures.FONT)
    axis.grid(axis="x", color="0.88", linewidth=0.6)
    axis.set_axisbelow(True)
    axis.set_xlabel(f"rank by A on {task} (1 = best)", fontsize=figures.FONT)
    handles = [
        Line2D([], [], color=SHADES[0], alpha=0.35, linewidth=7, label="95% simultaneous"),
        Line2D([], [], color=SHADES[0], linewidth=2.2, label="95% marginal"),
        Line2D([], [], color="black", marker="o", linestyle="", markersize=3.5,
               label="point estimate"),
    ]  # fmt: skip
    fig.legend(handles=handles, loc="upper center", ncol=3, fontsize=figures.FONT,
               frameon=False, bbox_to_anchor=(0.5, 1 - 0.4 / height))  # fmt: skip
    fig.suptitle(f"Ranks with their 95% confidence sets, in tiers ({total} ranked models)",
                 fontsize=figures.FONT + 1, y=1 - 0.1 / height, va="top")  # fmt: skip
    if shown < total:
        fig.text(0.5, 0.2 / height, f"the other {total - shown} models: the ranking table",
                 ha="center", fontsize=figures.FONT)  # fmt: skip
    fig.subplots_adjust(left=(label_width + 0.5) / width, right=1 - 0.25 / width,
                        top=1 - header / height, bottom=footer / height)  # fmt: skip
    return figures.save(fig, out / STEM)
