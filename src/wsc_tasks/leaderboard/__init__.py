"""The leaderboard of a sweep: the conclusion first, then models ranked by schema accuracy.

In every format (``leaderboard.md``, ``.html``, ``.csv``) and in the same order: the findings (one
sentence per model by the rules of ``claims.findings``), the notes a reader must see before a
number (a ``--limit``, incomplete samples, failed models), then the tables. The ranking is
compact: schema accuracy *A* and problem accuracy *a* of the ranking task with 95% intervals and
p against chance (two-sided, with the side), the paired difference with the next model down, how
many control baselines the model is above chance on, its lowest schema consistency under the
ranking task's perturbations (the family the findings name their lowest from) and its
GPU-hours. Chance models (``wsc-chance``) are the calibration check, in a table of their own, not
ranked. The control baselines (problem accuracy without what a reader needs) and the schema
consistency under each perturbation have their own tables; the models' metadata (a Hub model's
id, commit and query; parameters, precision, revision, fingerprint, date, versions, links to their
files) too; then the pairwise matrix of paired differences and the models without a result.
Everything is recomputed from the saved samples with a fixed seed; the CSV has one row per model
with every number of every table, its text cells safe to open in a spreadsheet.
"""

from wsc_tasks.leaderboard.board import Leaderboard, build
from wsc_tasks.leaderboard.entries import (
    CONTROLS,
    DEFAULT_TASK,
    FOREIGN_TASK,
    Board,
    Entry,
    default_task,
    is_chance_model,
    made_elsewhere,
    model_folders,
    rank,
)
from wsc_tasks.leaderboard.layout import Tables, contamination_table, parameters, precision, tables
from wsc_tasks.leaderboard.writing import (
    contamination_columns,
    csv_frame,
    html_text,
    markdown_text,
    printed,
    save,
    write,
)

__all__ = [
    "CONTROLS",
    "DEFAULT_TASK",
    "Board",
    "Entry",
    "FOREIGN_TASK",
    "Leaderboard",
    "Tables",
    "build",
    "contamination_columns",
    "contamination_table",
    "csv_frame",
    "default_task",
    "html_text",
    "is_chance_model",
    "made_elsewhere",
    "markdown_text",
    "model_folders",
    "parameters",
    "precision",
    "printed",
    "rank",
    "save",
    "tables",
    "write",
]
