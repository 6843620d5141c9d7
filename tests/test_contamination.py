"""The contamination check (Oren et al. 2024's sharded exchangeability test): the statistic on
hand-computed cases, the shards of the published files, its false-positive rate by simulation
under exchangeability, and a tiny causal model flagged after a few fine-tuning steps on WSC273's
published order while the same model untouched (and other random ones) is not."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import lm_eval
import numpy as np
import pytest
import tiny_models
import torch

from wsc_tasks import leaderboard, markup
from wsc_tasks.claims import findings
from wsc_tasks.cli import main as cli
from wsc_tasks.cli import report
from wsc_tasks.data import canonical, catalog
from wsc_tasks.metrics import contamination, multiple_testing, registry
from wsc_tasks.metrics.registry import Key, TaskKind
from wsc_tasks.report.sections import contamination as contamination_section
from wsc_tasks.runs import folders as runs
from wsc_tasks.tasks.contamination import ContaminationTask


def said_md(said):
    """Sentences as report.md shows them (task names in code spans): the rules mark them."""
    return markup.markdown(said) if isinstance(said, str) else [markup.markdown(s) for s in said]


# the CI check: the first LIMIT shards of WSC273 cut in SHARDS, PERMUTATIONS shuffles each
SHARDS, LIMIT, PERMUTATIONS = 34, 12, 5
ALPHA = 0.05


# -- the statistic by hand -------------------------------------------------------------------------
def test_shard_difference_by_hand():
    item = {"canonical": -10.0, "shuffled": [-12.0, -14.0], "n": 4}
    assert contamination.difference(item) == 0.75  # (-10 - (-13)) / 4
    with pytest.raises(ValueError, match="without shuffles"):
        contamination.difference({"canonical": 0.0, "shuffled": [], "n": 1})


def test_sharded_t_test_by_hand():
    # d = 1, 2, 3: mean 2, sd 1, se 1/√3, t = 2√3; df 2: sf(t) = (1 − t/√(t² + 2)) / 2
    result = contamination.sharded_test([1.0, 2.0, 3.0])
    t = 2 * math.sqrt(3)
    assert result.t == pytest.approx(t)
    assert result.p == pytest.approx((1 - t / math.sqrt(t * t + 2)) / 2)  # 0.037089
    assert result.p == pytest.approx(0.037089, abs=1e-6)
    half = 4.302653 / math.sqrt(3)  # t_{0.975, 2} · se
    assert (result.low, result.high) == (pytest.approx(2 - half), pytest.approx(2 + half))
    assert result.effect == 2.0 and result.shards == 3
    # a less likely published order is no evidence: p near 1, one-sided
    assert contamination.sharded_test([-1.0, -2.0, -3.0]).p == pytest.approx(1 - 0.037089, 1e-5)
    assert math.isnan(contamination.sharded_test([1.0]).p)
    assert contamination.sharded_test([0.0, 0.0]).p == 1.0


def test_registry_records_and_task_kind():
    names = {m.name for m in registry.REGISTRY if m.value == registry.SHARDS}
    assert {"contamination_p", "contamination_effect", "n_shards", "n_positions"} <= names
    assert registry.task_kind([Key("contamination_p")]) is TaskKind.CONTAMINATION
    assert registry.headline(TaskKind.CONTAMINATION) == names - {"n_shards", "n_positions"}
    items = [{"canonical": -9.0, "shuffled": [-10.0], "n": 2}, {"canonical": -8.0,
             "shuffled": [-10.0, -10.0], "n": 2}]  # fmt: skip
    assert registry.bind("contamination_effect")(items) == 0.75  # (0.5 + 1) / 2
    assert registry.bind("n_positions")(items) == 2 * 2 + 2 * 3


# -- the published files and their shards ----------------------------------------------------------
def test_published_datasets_are_the_catalogs_own():
    assert canonical.published() == ["wsc273_schemas", "wsc266", "winogrande_dev", "reid250"]
    with pytest.raises(KeyError, match="no published order"):
        canonical.units("wsc266_switched")


def test_shards_keep_schemas_whole_and_in_file_order():
    units = canonical.units("wsc273_schemas")
    schemas = catalog.load("wsc273_schemas")
    assert len(units) == len(schemas) == 136
    assert units[0] == (
        "The city councilmen refused the demonstrators a permit because _ feared violence.\n"
        "The city councilmen refused the demonstrators a permit because _ advocated violence."
    )
    shards = canonical.shards("wsc273_schemas", 17, 10, seed=1)
    assert [len(s.units) for s in shards] == [8] * 17
    assert canonical.SEPARATOR.join(s.canonical for s in shards) == "\n".join(units)
    for shard in shards:  # every shuffle is the same schemas in another order
        for order, text in zip(shard.orders, shard.shuffled(), strict=True):
            assert sorted(order) == list(range(8))
            assert sorted(text.split("\n")) == sorted(shard.canonical.split("\n"))
    # a shard's orders depend on the seed and its index only (a --limit run's are the full run's)
    again = canonical.shards("wsc273_schemas", 17, 10, seed=1)
    assert again[3].orders == shards[3].orders != canonical.shards("wsc273_schemas", 17, 10, 2)[3]
    assert canonical.shard_bounds(5, 2) == [(0, 3), (3, 5)]
    with pytest.raises(ValueError, match="at most 68 shards"):
        canonical.shard_bounds(136, 69)


def test_bad_metadata_is_one_line_naming_the_task(task_manager):
    with pytest.raises(
        ValueError,
        match="task wsc273_contamination: metadata permutations: 0 is not an integer ≥ 1; fix: ",
    ):
        task_manager(permutations=0).load(["wsc273_contamination"])
    with pytest.raises(ValueError, match="published dataset"):
        ContaminationTask.validate_metadata("x", {"dataset": "wsc266_switched", "shards": 4})


# -- false-positive rate under exchangeability, by simulation --------------------------------------
@pytest.mark.parametrize("shards", [12, 17, 49])
def test_false_positive_rate_by_simulation(shards):
    """Under the null, the published order is one more draw of the shard's order distribution:
    draw each shard's 1 + m log-likelihoods i.i.d. from a skewed distribution (a Gumbel, as a
    maximum-like sum of surprisals; also lognormal) and count p < α. The t-test's rate stays at or
    under α: 20,000 simulated checks give it ±0.3 points (2 standard errors)."""
    rng = np.random.default_rng(7)
    sims, m = 20_000, 10
    for draw in (rng.gumbel, rng.lognormal):
        ll = draw(size=(sims, shards, 1 + m))
        d = ll[:, :, 0] - ll[:, :, 1:].mean(axis=2)
        p = np.array([contamination.sharded_test(list(row)).p for row in d[:4000]])
        rate = float(np.mean(p < ALPHA))
        assert rate < ALPHA + 0.011, (draw.__name__, shards, rate)  # 2 se at 4,000
        # vectorised over all 20,000 for the figure
        from scipy import stats as scipy_stats

        t = d.mean(axis=1) / (d.std(axis=1, ddof=1) / math.sqrt(shards))
        rate = float(np.mean(scipy_stats.t.sf(t, shards - 1) < ALPHA))
        print(f"{draw.__name__}, {shards} shards: false-positive rate {rate:.4f} at α = {ALPHA}")
        assert rate < ALPHA + 0.004


@pytest.mark.parametrize("m", [1, 2, 4])
@pytest.mark.parametrize("shards", [8, 15, 16])
def test_false_positive_rate_with_few_shuffles(shards, m):
    """Fewer shuffles per shard cost power, not validity: with m = 1 the shard's d_i is the
    difference of two i.i.d. draws, symmetric about 0, where the t-test is at its most exact.
    Vectorised over 40,000 simulated checks (2 standard errors at α: ±0.0022) for the shard
    counts of the SmolLM2 runs with reduced shuffles, and 8 shards (a --limit run)."""
    from scipy import stats as scipy_stats

    rng = np.random.default_rng(11)
    sims = 40_000
    for draw in (rng.gumbel, rng.lognormal):
        ll = draw(size=(sims, shards, 1 + m))
        d = ll[:, :, 0] - ll[:, :, 1:].mean(axis=2)
        t = d.mean(axis=1) / (d.std(axis=1, ddof=1) / math.sqrt(shards))
        rate = float(np.mean(scipy_stats.t.sf(t, shards - 1) < ALPHA))
        print(f"{draw.__name__}, {shards} shards, {m} shuffles: rate {rate:.4f} at α = {ALPHA}")
        assert rate < ALPHA + 0.0022, (draw.__name__, shards, m, rate)
        assert contamination.sharded_test(list(d[0])).p == pytest.approx(
            float(scipy_stats.t.sf(t[0], shards - 1))
        )


# -- tiny models through lm-eval: flagged after fine-tuning, not before ----------------------------
@pytest.fixture(scope="module")
def one_thread():
    """Tiny models on a shared 2-core machine run 20× faster on one thread than on two."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="module")
def texts() -> list[str]:
    return tiny_models.sentences("wsc273_schemas")


def published_prefix() -> str:
    """WSC273's published order, as the check writes it, up to the end of shard LIMIT."""
    units = canonical.units("wsc273_schemas")
    end = canonical.shard_bounds(len(units), SHARDS)[LIMIT - 1][1]
    return canonical.SEPARATOR.join(units[:end])


def fine_tune(source: Path, folder: Path, text: str, steps: int = 60, lr: float = 5e-3) -> Path:
    """``source`` trained for ``steps`` AdamW steps (seeded) on windows of ``text``: a model that
    saw that file in that order."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(source)
    model = AutoModelForCausalLM.from_pretrained(source)
    ids = tok(text, add_special_tokens=False)["input_ids"]
    width = 64
    windows = torch.tensor([ids[i : i + width] for i in range(0, len(ids) - width, width // 2)])
    optimiser = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.0)
    generator = torch.Generator().manual_seed(0)
    model.train()
    for _ in range(steps):
        batch = windows[torch.randperm(len(windows), generator=generator)[:16]]
        model(batch, labels=batch).loss.backward()
        optimiser.step()
        optimiser.zero_grad()
    model.eval().save_pretrained(folder)
    tok.save_pretrained(folder)
    return folder


def run(model_dir: Path, folder: Path) -> Path:
    """``wsc-tasks run`` of the check on ``model_dir``, its results and samples in ``folder``."""
    metadata = json.dumps({"shards": SHARDS, "permutations": PERMUTATIONS})
    argv = ["run", "--model", "hf", "--model_args", f"pretrained={model_dir}", "--device", "cpu"]
    argv += ["--tasks", "wsc273_contamination", "--limit", str(LIMIT), "--metadata", metadata]
    cli([*argv, "--log_samples", "--output_path", str(folder)])
    return folder


def figures(folder: Path) -> dict:
    """lm-eval's figures, and the counts (no figures of the model: in the samples alone)."""
    task = runs.load_run(folder).tasks["wsc273_contamination"]
    counts = {f"{n},none": registry.bind(n)(task.values[n]) for n in ("n_shards", "n_positions")}
    return {**task.row, **counts}


@pytest.fixture(scope="module")
def models(tmp_path_factory, texts, one_thread) -> dict[str, Path]:
    """The check's outputs on a random Llama and on the same model fine-tuned on WSC273's
    published order (the first LIMIT shards' schemas)."""
    untouched = tiny_models.llama(tmp_path_factory.mktemp("untouched"), texts, seed=1)
    tuned = fine_tune(untouched, tmp_path_factory.mktemp("tuned"), published_prefix())
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(sys, "argv", list(sys.argv))
        return {
            "untouched": run(untouched, tmp_path_factory.mktemp("untouched-run")),
            "fine-tuned": run(tuned, tmp_path_factory.mktemp("tuned-run")),
        }


def test_fine_tuned_model_is_flagged_and_untouched_is_not(models):
    before, after = figures(models["untouched"]), figures(models["fine-tuned"])
    for name, r in (("untouched", before), ("fine-tuned", after)):
        print(
            f"{name}: p = {r['contamination_p,none']:.3g}, effect "
            f"{r['contamination_effect,none']:.4f} nats/token "
            f"[{r['contamination_effect_low,none']:.4f}, {r['contamination_effect_high,none']:.4f}]"
            f", {r['n_shards,none']} shards, {r['n_positions,none']} positions"
        )
    assert before["n_shards,none"] == after["n_shards,none"] == LIMIT
    assert before["contamination_p,none"] >= ALPHA
    assert after["contamination_p,none"] < ALPHA
    assert after["contamination_effect_low,none"] > 0
    assert before["contamination_effect_low,none"] <= 0 <= before["contamination_effect_high,none"]


def test_report_leaderboard_and_findings_say_it(models, tmp_path):
    loaded = [runs.load_run(models[name], label=name) for name in ("untouched", "fine-tuned")]
    checks = {run.label: contamination_section.checks(run) for run in loaded}
    # the samples give lm-eval's figures
    for run in loaded:
        row = run.tasks["wsc273_contamination"].row
        assert checks[run.label][0].p == pytest.approx(row["contamination_p,none"])
    untouched = findings.Model("untouched", contamination=checks["untouched"])
    tuned = findings.Model("fine-tuned", contamination=checks["fine-tuned"])
    assert said_md(findings.contamination(untouched))[0].startswith(
        "No evidence of contamination on `wsc273_schemas` (p = "
    )
    said = said_md(findings.contamination(tuned))[0]
    assert said.startswith("On `wsc273_schemas` the canonical order is more likely than shuffles")
    assert "likely contaminated" in said_md(findings.brief(tuned))
    # the report: its section and the findings' sentence
    assert report.main([f"untouched={models['untouched']}", f"tuned={models['fine-tuned']}",
                        "--iters", "200", "--out", str(tmp_path / "report")]) == 0  # fmt: skip
    text = (tmp_path / "report" / "report.md").read_text()
    assert "Has the model seen the test?" in text
    assert "the canonical order is more likely than shuffles" in text
    assert "No evidence of contamination on `wsc273_schemas`" in text
    table = (tmp_path / "report" / "tables" / "contamination.csv").read_text()
    assert table.count("wsc273_schemas") == 2
    # the leaderboard: its table and its CSV columns
    board = leaderboard.Board("wsc266", 200, 1)
    entries = [board.entry(run, tmp_path, {}) for run in loaded]
    shown = leaderboard.contamination_table(entries)
    assert [row[0] for row in shown.rows] == ["untouched", "fine-tuned"]
    frame = leaderboard.contamination_columns(entries)
    assert frame["contamination p wsc273_schemas"].tolist() == pytest.approx(
        [c[0].p for c in checks.values()]
    )


@pytest.mark.parametrize("seed", [2, 3])
def test_untouched_random_models_are_not_flagged(seed, tmp_path, texts, task_manager, one_thread):
    """Other random initialisations: no order is special to them (the simulation above measures
    the rate; these check that real models' shard differences behave as simulated)."""
    out = lm_eval.simple_evaluate(
        model="hf",
        model_args=f"pretrained={tiny_models.llama(tmp_path, texts, seed=seed)}",
        tasks=["wsc273_contamination"],
        task_manager=task_manager(shards=SHARDS, permutations=PERMUTATIONS),
        limit=LIMIT,
        device="cpu",
    )
    p = out["results"]["wsc273_contamination"]["contamination_p,none"]
    print(f"random llama seed {seed}: p = {p:.3g}")
    assert p >= ALPHA


def test_contamination_sentences_by_the_findings_rule():
    def file(dataset: str, p: float, low: float = 0.002) -> findings.Contamination:
        return findings.Contamination(f"{dataset}_x", dataset, p, 0.01, low, 0.018, 16)

    # one-sided .005, .2, .002 are two-sided .01, .4, .004; Holm over 3: .02, .4, .012
    model = findings.Model("m", contamination=(file("a", 0.005), file("b", 0.2), file("c", 0.002)))
    assert multiple_testing.holm([c.two_sided for c in model.contamination]) == pytest.approx(
        [0.02, 0.4, 0.012]
    )
    said = said_md(findings.contamination(model))
    assert said[0] == (
        "On `a` the canonical order is more likely than shuffles: p = .01 (Holm over the 3 files "
        "checked: p = .02); +0.0100 nats/token [+0.0020, +0.0180], 16 shards. The model has "
        "probably seen this file in this order: its scores on it, and on the tasks made from it, "
        "may be memory rather than reasoning."
    )
    assert said[1].startswith("On `c` the canonical order is more likely than shuffles: p = .004")
    assert said[2] == (
        "No evidence of contamination on `b` (p = .4): the published order is not "
        "distinguishable from shuffles (this does not show the files unseen)."
    )
    alone = findings.Model("m", contamination=(file("a", 0.01),))  # two-sided .02
    assert said_md(findings.contamination(alone))[0].startswith("On `a`")
    # beside three others at .5 its Holm p is .08: no evidence
    four = (file("a", 0.01), *(file(x, 0.5) for x in "bcd"))
    assert said_md(findings.contamination(findings.Model("m", contamination=four)))[0].startswith(
        "No evidence of contamination on `a` (p = .02), `b`"
    )
    # the interval must lie above 0 too (the findings' rule)
    crossing = findings.Model("m", contamination=(file("a", 0.01, low=-0.001),))
    assert said_md(findings.contamination(crossing))[0].startswith("No evidence")
    assert said_md(findings.contamination(findings.Model("m"))) == []
