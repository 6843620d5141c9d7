"""Every metric and stderr of a representative set of tasks on the chance model, as JSON.

The speed work (vectorised bootstraps, deduplicated requests, a shorter printed table)
must leave every figure unchanged for the same seed. ``tests/fixtures/reference_metrics.json`` was
written by this script on the code before that work (``python tests/reference_metrics.py``);
``test_reference_metrics.py`` reruns the same evaluation and compares value by value.
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

TASKS = [
    "wsc266",
    "wsc266_switched_consistency",
    "wsc266_associativity",
    "winogrande_twins",
    "reid250_inverted",
    "reid250_inverted_consistency",
    "winowhy",
    "wsc273_schemas",
    "wsc273_zeroshot",
]
LIMIT = 40
SEED = 1
FIXTURE = Path(__file__).with_name("fixtures") / "reference_metrics.json"


def evaluate(tokenizer_dir: Path, out: Path, extra: list[str] | None = None) -> dict:
    """lm-eval's ``results`` of the chance model with GPT-2's tokenizer on ``TASKS``."""
    from wsc_tasks.cli import main as cli

    argv = ["run", "--model", "wsc-chance", "--tasks", ",".join(TASKS), "--limit", str(LIMIT)]
    argv += ["--model_args", f"seed={SEED},tokenizer={tokenizer_dir}", "--output_path", str(out)]
    saved = list(sys.argv)
    try:
        cli(argv + list(extra or []))
    finally:
        sys.argv = saved
    [path] = sorted(out.rglob("results_*.json"))
    return json.loads(path.read_text())["results"]


def figures(results: dict) -> dict[str, dict[str, object]]:
    """Task → metric key → value, without lm-eval's ``alias``; NaN as the string ``"nan"``."""
    out = {}
    for task, row in sorted(results.items()):
        out[task] = {
            key: ("nan" if isinstance(value, float) and value != value else value)
            for key, value in sorted(row.items())
            if key != "alias"
        }
    return out


def main() -> int:
    import conftest  # noqa: F401  the data directory and offline settings, as in the tests
    from tiny_models import gpt2_tokenizer

    with tempfile.TemporaryDirectory() as tmp:
        tokenizer_dir = Path(tmp) / "gpt2"
        gpt2_tokenizer().save_pretrained(tokenizer_dir)
        results = evaluate(tokenizer_dir, Path(tmp) / "out")
    FIXTURE.parent.mkdir(exist_ok=True)
    FIXTURE.write_text(json.dumps(figures(results), indent=1, sort_keys=True) + "\n")
    print(f"wrote {FIXTURE}: {sum(len(r) for r in figures(results).values())} figures")
    return 0


if __name__ == "__main__":
    sys.exit(main())
