"""Every metric and stderr of a representative set of tasks on the chance model, as JSON.

The speed work (vectorised bootstraps, deduplicated requests, a shorter printed table)
must leave every figure unchanged for the same seed. ``tests/fixtures/reference_metrics.json`` was
written by this script on the code before that work (``python tests/reference_metrics.py``, or
``python tests/regenerate.py`` with every other committed output); ``test_reference_metrics.py``
reruns the same evaluation, with the same ``METADATA``, and compares value by value.
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
METADATA = ["--metadata", '{"metrics": "all"}']  # every metric, not only each task's headline


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
    """Task → metric key → value, without lm-eval's ``alias``, the standard errors lm-eval
    writes for the package's ``<metric>_stderr`` metrics themselves (``N/A``) and the count of
    the metrics not aggregated; a metric without a value (NaN, or lm-eval's ``N/A``) as the
    string ``"nan"``."""
    from wsc_tasks.metrics import registry

    out = {}
    for task, row in sorted(results.items()):
        kept = {}
        for key, value in sorted(row.items()):
            name = key.partition(",")[0]
            if key == "alias" or name == registry.MORE_METRICS:
                continue
            if registry.is_stderr_name(name) and registry.is_stderr_name(
                name.removesuffix(registry.STDERR)
            ):
                continue
            undefined = isinstance(value, float) and value != value
            if undefined or (value == registry.NOT_AVAILABLE and not registry.is_stderr_name(name)):
                value = "nan"
            kept[key] = value
        out[task] = kept
    return out


def write(fixture: Path = FIXTURE) -> int:
    """Evaluate as ``test_reference_metrics.py`` does and write ``fixture``; its figure count."""
    import conftest  # noqa: F401  the data directory and offline settings, as in the tests
    from tiny_models import gpt2_tokenizer

    with tempfile.TemporaryDirectory() as tmp:
        tokenizer_dir = Path(tmp) / "gpt2"
        gpt2_tokenizer().save_pretrained(tokenizer_dir)
        found = figures(evaluate(tokenizer_dir, Path(tmp) / "out", METADATA))
    fixture.parent.mkdir(parents=True, exist_ok=True)
    fixture.write_text(json.dumps(found, indent=1, sort_keys=True) + "\n")
    return sum(len(row) for row in found.values())


def main() -> int:
    print(f"wrote {FIXTURE}: {write()} figures")
    return 0


if __name__ == "__main__":
    sys.exit(main())
