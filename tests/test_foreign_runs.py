"""Runs this package did not make, read back as its own tasks (``wsc_tasks.runs.foreign``).

One lm-eval run of a tiny random GPT-2 gives everything: lm-eval's own ``winogrande`` and
``wsc273`` (their YAMLs unchanged but for reading the local dev file and a local copy of WSC273 in
``winograd_wsc``'s layout), this package's ``winogrande_dev``, ``winogrande_twins`` and
``wsc273_schemas`` with partial scoring, and ``wsc273`` once more without lm-eval's target
delimiter (``wsc273_bare``: its requests are then this package's on the problems whose text
agrees). Its samples are written as lm-eval 0.4.13 writes them; the older layouts, gzip and the
Open LLM Leaderboard's details file (the same run in its columns and its own row order) are
written from them here. Each is read back and held to the same problem outcomes, the same A and
the same intervals as this package's tasks, exactly; bad inputs are one line and exit 2.
"""

from __future__ import annotations

import gzip
import json
import os
import random
import shutil
import subprocess
import sys
from pathlib import Path

import lm_eval
import pyarrow.parquet as pq
import pytest
import yaml
from hub_server import HubServer
from lm_eval.loggers import EvaluationTracker
from lm_eval.tasks import TaskManager

from wsc_tasks import leaderboard
from wsc_tasks.cli import main as cli
from wsc_tasks.data import catalog, parsers
from wsc_tasks.metrics import ratios, stats
from wsc_tasks.metrics.registry import ACC, SCHEMA_ACC
from wsc_tasks.paths import include_path
from wsc_tasks.runs.folders import Run, RunError, TaskRun, load_run
from wsc_tasks.runs.foreign import leaderboard_details, sources
from wsc_tasks.runs.foreign.pinned import pinned
from wsc_tasks.scoring.causal import partial_request

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[1]
LM_EVAL_TASKS = Path(lm_eval.__file__).parent / "tasks"
OURS = ["winogrande_dev", "winogrande_twins", "wsc273_schemas"]
BUILTIN = ["winogrande", "wsc273", "wsc273_bare"]
DATE = "2023-09-18T03-05-58.053951"  # a details file's run time, as the leaderboard wrote it
DETAILS = f"details_harness|winogrande|0_{DATE}.parquet"
ITERS = 200


# -- the run --------------------------------------------------------------------------------------
def wsc273_rows(data_dir: Path) -> list[dict]:
    """WSC273 as ``datasets``' ``winograd_wsc`` script writes it (``text`` the three parts joined
    by spaces, ``pronoun_loc`` after the first, the options and label as the XML has them), from
    the raw WSC273 of ``winowhy.json``: lm-eval's ``wsc273`` reads ``lighteval/winograd_wsc``,
    made by that script."""
    rows = []
    for q in parsers.read_wsc273_json(data_dir / "winowhy" / "winowhy.json"):
        text = " ".join([q.before, q.pronoun, q.after]).strip()
        rows.append({"text": text, "pronoun": q.pronoun,
                     "pronoun_loc": len(q.before) + 1 if q.before else 0, "quote": "",
                     "quote_loc": 0, "options": list(q.answers), "label": q.correct,
                     "source": ""})  # fmt: skip
    return rows


@pytest.fixture(scope="module")
def builtin_dir(tmp_path_factory, data_dir) -> Path:
    """lm-eval's own ``winogrande`` and ``wsc273``, unchanged but for their data files."""
    folder = tmp_path_factory.mktemp("builtin")
    wsc = folder / "wsc273.jsonl"
    wsc.write_text("".join(json.dumps(r) + "\n" for r in wsc273_rows(data_dir)))
    dev = str(data_dir / catalog.WINOGRANDE_DEV)
    train = str(data_dir / "elazar" / "winogrande" / "train_xs.jsonl")
    configs = {
        "winogrande": {"include": str(LM_EVAL_TASKS / "winogrande" / "default.yaml"),
                       "dataset_path": "json", "dataset_name": None,
                       "dataset_kwargs": {"data_files": {"validation": dev, "train": train}}},
        "wsc273": {"include": str(LM_EVAL_TASKS / "wsc273" / "default.yaml"),
                   "dataset_path": "json", "dataset_name": None,
                   "dataset_kwargs": {"data_files": {"test": str(wsc)}}},
    }  # fmt: skip
    configs["wsc273_bare"] = {**configs["wsc273"], "target_delimiter": ""}
    for name, config in configs.items():
        (folder / f"{name}.yaml").write_text(yaml.safe_dump({**config, "task": name}))
    return folder


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory, tiny_gpt2_dir, builtin_dir) -> Path:
    """The run's output folder, written as ``lm_eval --output_path --log_samples`` writes it."""
    manager = TaskManager(
        include_path=[str(include_path()), str(builtin_dir)],
        include_defaults=False,
        metadata={"scoring": "partial", "headline": "partial", "pretrained": str(tiny_gpt2_dir)},
    )
    results = lm_eval.simple_evaluate(
        model="hf", model_args=f"pretrained={tiny_gpt2_dir}", tasks=[*BUILTIN, *OURS],
        task_manager=manager, device="cpu", batch_size=64, log_samples=True,
    )  # fmt: skip
    out = tmp_path_factory.mktemp("run")
    tracker = EvaluationTracker(output_path=str(out))
    samples = results.pop("samples")
    tracker.save_results_aggregated(results=results, samples=samples)
    for name in results["configs"]:
        tracker.save_results_samples(task_name=name, samples=samples[name])
    [folder] = [p.parent for p in out.rglob("results_*.json")]
    return folder


@pytest.fixture(scope="module")
def run(run_dir) -> Run:
    return load_run(run_dir)


def samples_of(folder: Path, task: str) -> Path:
    [path] = folder.glob(f"samples_{task}_2*.jsonl")  # the date next: not wsc273_schemas'
    return path


def outcomes(task: TaskRun) -> dict[str, int]:
    """problem id → answered right, from a task's documents and per-document outcomes."""
    found = {}
    for doc, value in zip(task.docs, task.values[ACC], strict=True):
        for problem, right in zip(doc["problems"], value["correct"], strict=True):
            found[problem["uid"]] = right
    return found


def estimates(task: TaskRun) -> list[stats.Estimate]:
    out = []
    for metric, form in ((ACC, ratios.PROBLEM_ACCURACY), (SCHEMA_ACC, ratios.SCHEMA_ACCURACY)):
        values = task.values[metric]
        out.append(stats.bootstrap(values, form, null=0.5, iters=ITERS, seed=0))
    return out


# -- fidelity -------------------------------------------------------------------------------------
def test_lm_evals_winogrande_read_back_is_winogrande_dev_and_twins_exactly(run):
    """Problem outcomes of every one of the 1,267 problems, a, A, and the bootstrap's intervals
    and p's: the same numbers as this package's tasks with partial scoring on the same model."""
    theirs, ours = run.tasks["winogrande"], run.tasks["winogrande_dev"]
    assert theirs.origin is not None and theirs.dataset == "winogrande_dev"
    assert theirs.origin.describe() == "lm-eval winogrande, partial scoring, 0-shot"
    assert len(outcomes(theirs)) == 1267
    assert outcomes(theirs) == outcomes(ours)
    assert theirs.values[ACC] == ours.values[ACC]  # the same documents in the same order
    assert theirs.row["acc,none"] == ours.reported(ACC)
    assert theirs.row["schema_acc,none"] == ours.reported(SCHEMA_ACC)
    assert estimates(theirs) == estimates(ours)
    twins, own_twins = run.tasks["winogrande (twin pairs)"], run.tasks["winogrande_twins"]
    assert twins.dataset == "winogrande_twins" and len(twins.docs) == 284
    assert twins.values[ACC] == own_twins.values[ACC]
    assert twins.row["schema_acc,none"] == own_twins.reported(SCHEMA_ACC)
    assert estimates(twins) == estimates(own_twins)
    assert run.task_for("winogrande_twins") is own_twins  # this package's own task first
    assert run.notes() == []


def _lm_eval_wsc273(path: Path, data_dir: Path) -> dict[int, tuple[list[str], int]]:
    """WSC273 number → (the two requests' texts, lm-eval's own verdict) from a samples file,
    matched by the sentence's text, independently of ``runs.foreign``."""
    numbers = {}
    for q in parsers.read_wsc273_json(data_dir / "winowhy" / "winowhy.json"):
        numbers[(q.before, q.pronoun, q.after)] = q.number
    found = {}
    for line in path.read_text().splitlines():
        row = json.loads(line)
        doc = row["doc"]
        at, pronoun = doc["pronoun_loc"], doc["pronoun"]
        key = tuple(" ".join(p.split()) for p in (doc["text"][:at], pronoun,
                                                  doc["text"][at + len(pronoun):]))  # fmt: skip
        requests = [row["arguments"][f"gen_args_{i}"] for i in (0, 1)]
        found[numbers[key]] = ([r["arg_0"] + "\x00" + r["arg_1"] for r in requests], row["acc"])
    return found


def test_lm_evals_wsc273_read_back_is_matched_to_wsc273_schemas(run, run_dir, data_dir):
    """Every WSC273 problem gets lm-eval's own verdict, under its number in ``wsc273_schemas``;
    A is the share of that dataset's groups (the triple 253-255 as {253,254}, {254,255}) solved.
    Without lm-eval's extra target delimiter (``wsc273_bare``) its requests are this package's
    partial ones wherever the two texts agree, and there the outcomes are equal, exactly."""
    ours = run.tasks["wsc273_schemas"]
    schemas = catalog.load("wsc273_schemas")
    number = {p.uid: p.number for s in schemas for p in s.problems}
    for name in ("wsc273", "wsc273_bare"):
        theirs = run.tasks[name]
        assert theirs.dataset == "wsc273_schemas" and theirs.origin is not None
        verdicts = _lm_eval_wsc273(samples_of(run_dir, name), data_dir)
        read = {number[uid]: right for uid, right in outcomes(theirs).items()}
        assert read == {n: int(acc) for n, (_, acc) in verdicts.items()}
        solved = groups = 0
        for schema in schemas:
            for group in schema.groups:
                groups += 1
                solved += all(read[schema.problems[i].number] for i in group)
        assert (solved, groups) == (round(theirs.row["schema_acc,none"] * 137), 137)
    bare = _lm_eval_wsc273(samples_of(run_dir, "wsc273_bare"), data_dir)
    same = []
    for schema in schemas:
        for problem in schema.problems:
            mine = [partial_request(problem, i)[1] for i in (0, 1)]
            if [c + "\x00" + t for c, t in mine] == bare[problem.number][0]:
                same.append(problem.uid)
    assert len(same) == 251  # the 22 others: the raw text has a space before its last stop
    read, own = outcomes(run.tasks["wsc273_bare"]), outcomes(ours)
    assert {u: read[u] for u in same} == {u: own[u] for u in same}
    # lm-eval's own wsc273 puts its delimiter before a text that starts with a space: no request
    # is this package's, and its outcomes may differ
    plain = _lm_eval_wsc273(samples_of(run_dir, "wsc273"), data_dir)
    assert all(texts[0].split("\x00")[1].startswith("  ") for texts, _ in plain.values())


# -- the samples layouts --------------------------------------------------------------------------
def _rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _as_040(row: dict) -> dict:
    """A row as lm-eval 0.4.0-0.4.2 (and ``simple_evaluate``'s own samples) has it: arguments
    as lists, the model's numbers as numbers, no ``filter``/``metrics``/hashes."""
    args = [[a["arg_0"], a["arg_1"]] for a in row["arguments"].values()]
    resps = [[[float(r[0][0]), r[0][1] == "True"]] for r in row["resps"]]
    kept = {k: row[k] for k in ("doc_id", "doc", "target", "acc")}
    return {**kept, "arguments": args, "resps": resps, "filtered_resps": [r[0] for r in resps]}


def _as_043(row: dict) -> dict:
    """A row as lm-eval 0.4.3-0.4.8 wrote it: gen_args mappings and strings, no ``metrics``."""
    kept = {k: v for k, v in row.items() if k not in ("metrics", "filter", "target_hash")}
    return {**kept, "target": 1}  # ``target`` as the task returned it, not yet str()-ed


def layout(folder: Path, run_dir: Path, kind: str) -> Path:
    """``run_dir``'s winogrande samples in layout ``kind``, with its results file; the path to
    give ``wsc-tasks report``."""
    source = samples_of(run_dir, "winogrande")
    [results] = run_dir.glob("results_*.json")
    folder.mkdir()
    rows = _rows(source)
    if kind == "0.4.0":  # an indented JSON array beside results.json
        shutil.copy(results, folder / "results.json")
        text = json.dumps([_as_040(r) for r in rows], indent=2)
        (folder / "pretrained__tiny_winogrande.jsonl").write_text(text)
        return folder
    shutil.copy(results, folder / results.name)
    name = folder / source.name
    if kind == "0.4.3":
        name.write_text("".join(json.dumps(_as_043(r)) + "\n" for r in rows))
    elif kind == "simple_evaluate":
        name.write_text("".join(json.dumps(_as_040(r)) + "\n" for r in rows))
    elif kind == "gzip":
        name = name.with_name(name.name + ".gz")
        name.write_bytes(gzip.compress(source.read_bytes()))
    return name if kind == "simple_evaluate" else folder


@pytest.mark.parametrize("kind", ["0.4.0", "0.4.3", "simple_evaluate", "gzip"])
def test_every_samples_layout_reads_to_the_same_outcomes(run, run_dir, tmp_path, kind):
    found = sources.load(str(layout(tmp_path / kind, run_dir, kind)))
    theirs = found.tasks["winogrande"]
    assert theirs.values[ACC] == run.tasks["winogrande_dev"].values[ACC]
    assert theirs.origin is not None and theirs.origin.num_fewshot == 0


# -- the Open LLM Leaderboard's details -----------------------------------------------------------
def write_details(run_dir: Path, folder: Path, gpt2_tok) -> Path:
    """The run's winogrande in a details file's layout: ``example`` the sentence, ``full_prompt``
    the context with the right option (lm-eval 0.3's ``doc_to_text``), ``predictions`` the two
    log-likelihoods, ``metrics.acc``, the tokens of each request; rows in an order of their own."""
    rows = []
    for row in _rows(samples_of(run_dir, "winogrande")):
        doc = row["doc"]
        args = [row["arguments"][f"gen_args_{i}"] for i in (0, 1)]
        rows.append({
            "example": doc["sentence"],
            "full_prompt": args[int(doc["answer"]) - 1]["arg_0"],
            "predictions": [float(r[0]) for r in row["filtered_resps"]],
            "acc": row["acc"],
            "input_tokens": [gpt2_tok(a["arg_0"] + a["arg_1"])["input_ids"] for a in args],
            "cont_tokens": [gpt2_tok(a["arg_1"])["input_ids"] for a in args],
        })  # fmt: skip
    random.Random(0).shuffle(rows)
    path = folder / DATE / DETAILS
    leaderboard_details.write(path, rows)
    return path


@pytest.fixture(scope="module")
def details(run_dir, tmp_path_factory, gpt2_tok) -> Path:
    folder = tmp_path_factory.mktemp("archive") / "details_org__tiny"
    return write_details(run_dir, folder, gpt2_tok)


def test_a_details_file_reads_to_the_same_outcomes(run, details):
    table = pq.read_table(details)
    assert tuple(table.column_names) == leaderboard_details.COLUMNS
    assert table.num_rows == 1267
    assert str(table.schema.field("choices").type).endswith(": null>")  # empty, null-typed
    found = sources.load(str(details.parent.parent))  # the repository's folder
    assert found.label == "org__tiny" and found.model_args == "pretrained=org/tiny"
    theirs, ours = found.tasks["winogrande"], run.tasks["winogrande_dev"]
    assert theirs.origin is not None
    assert theirs.origin.describe() == (
        "Open LLM Leaderboard (lm-eval) winogrande, partial scoring, 0-shot"
    )
    assert outcomes(theirs) == outcomes(ours)
    assert theirs.values[ACC] == ours.values[ACC]
    assert estimates(found.tasks["winogrande (twin pairs)"]) == estimates(
        run.tasks["winogrande_twins"]
    )


def _report(*args: str, capsys) -> tuple[int, list[str]]:
    code = cli(["report", *args, "--quiet", "--iters", str(ITERS)])
    return code, capsys.readouterr().err.strip().splitlines()


def test_the_report_of_a_details_file_states_what_it_cannot_say(details, tmp_path, capsys):
    out = tmp_path / "report"
    code, err = _report(str(details), "--out", str(out), capsys=capsys)
    assert code == 0, err
    text = (out / "report.md").read_text()
    assert "Scored by Open LLM Leaderboard (lm-eval) `winogrande`, partial scoring, 0-shot" in text
    assert "control baselines, perturbations and consistency are absent from such a run" in text
    assert "| org\\_\\_tiny | model | Open LLM Leaderboard (lm-eval) winogrande, partial" in text
    assert "Winogrande (`winogrande`): a = " in text


# -- bad input ------------------------------------------------------------------------------------
def _edited_samples(run_dir: Path, folder: Path, edit) -> Path:
    shutil.copytree(run_dir, folder)
    for path in folder.glob("samples_*"):
        if not path.name.startswith("samples_winogrande_2"):
            path.unlink()
    path = samples_of(folder, "winogrande")
    rows = edit(_rows(path))
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return folder


def _edited_results(run_dir: Path, folder: Path, edit) -> Path:
    found = _edited_samples(run_dir, folder, lambda rows: rows)
    [results] = found.glob("results_*.json")
    data = json.loads(results.read_text())
    edit(data)
    results.write_text(json.dumps(data))
    return found


def _another_version(rows):
    rows[4]["doc"]["sentence"] = rows[4]["doc"]["sentence"].replace(" ", "  very ", 1)
    return rows


def _other_answer(rows):
    rows[7]["doc"]["answer"] = "2" if rows[7]["doc"]["answer"] == "1" else "1"
    return rows


BAD_SAMPLES = {
    "another dataset version": (_another_version, "1 of its 1267 documents are not problems of "
                                "the pinned elazar/winogrande/dev.jsonl (another version of the "
                                "dataset?): line 5: "),
    "another answer": (_other_answer, "1 problem(s) have other options or another answer than "
                       "in the pinned elazar/winogrande/dev.jsonl"),
    "a document twice": (lambda rows: [*rows, rows[10]], "appears twice (line 11 and line 1268): "
                         "duplicated documents; nothing read"),
}  # fmt: skip


@pytest.mark.parametrize("case", list(BAD_SAMPLES))
def test_bad_samples_are_one_line_and_exit_2(run_dir, tmp_path, capsys, case):
    edit, said = BAD_SAMPLES[case]
    folder = _edited_samples(run_dir, tmp_path / "run", edit)
    code, err = _report(str(folder), "--out", str(tmp_path / "out"), capsys=capsys)
    assert code == 2 and len(err) == 1, err
    assert err[0].startswith("wsc-tasks: error: ") and "/samples_winogrande_" in err[0]
    assert said in err[0]
    assert not (tmp_path / "out").exists()


def _limited(data):
    data["config"]["limit"] = 100.0


def _some_samples(data):
    data["n-samples"]["winogrande"] = {"original": 1267, "effective": 1000}


@pytest.mark.parametrize(
    "edit, said",
    [(_limited, "was run with --limit 100 (results_"),
     (_some_samples, "was run on 1000 of its 1267 documents (--samples; results_")],
)  # fmt: skip
def test_a_limit_or_samples_run_is_refused(run_dir, tmp_path, capsys, edit, said):
    folder = _edited_results(run_dir, tmp_path / "run", edit)
    code, err = _report(str(folder), "--out", str(tmp_path / "out"), capsys=capsys)
    assert code == 2 and len(err) == 1, err
    assert said in err[0] and "not whole schemas" in err[0] or "not the dataset's schemas" in err[0]


def test_a_truncated_samples_file_is_refused(run_dir, tmp_path, capsys):
    folder = _edited_samples(run_dir, tmp_path / "run", lambda rows: rows)
    path = samples_of(folder, "winogrande")
    path.write_bytes(path.read_bytes()[: len(path.read_bytes()) // 2])
    code, err = _report(str(folder), "--out", str(tmp_path / "out"), capsys=capsys)
    assert code == 2 and len(err) == 1, err
    assert "incomplete" in err[0] or "truncated" in err[0]


def _details_copy(details: Path, folder: Path, edit) -> Path:
    rows = pq.read_table(details).to_pylist()
    rows = edit([{**r, "acc": r["metrics"]["acc"]} for r in rows])
    path = folder / DATE / DETAILS
    leaderboard_details.write(path, rows)
    return path


def _flip(rows):
    rows[3]["acc"] = 1.0 - rows[3]["acc"]
    return rows


@pytest.mark.parametrize(
    "edit, said",
    [(_flip, "the recorded verdict of 1 problem(s) is not what their log-likelihoods give "
              "against the answers of the pinned elazar/winogrande/dev.jsonl (the rows do not "
              "match the dev file): row 3"),
     (lambda rows: [*rows, rows[0]], "appears twice (row 0 and row 1267)")],
)  # fmt: skip
def test_bad_details_are_one_line_and_exit_2(details, tmp_path, capsys, edit, said):
    path = _details_copy(details, tmp_path / "details_org__bad", edit)
    code, err = _report(str(path), "--out", str(tmp_path / "out"), capsys=capsys)
    assert code == 2 and len(err) == 1, err
    assert str(path) in err[0] and said in err[0]


def test_a_truncated_details_file_is_refused(details, tmp_path, capsys):
    path = tmp_path / "details_org__cut" / DATE / DETAILS
    path.parent.mkdir(parents=True)
    data = details.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    code, err = _report(str(path), "--out", str(tmp_path / "out"), capsys=capsys)
    assert code == 2 and len(err) == 1, err
    assert f"{path}: cannot be read as Parquet" in err[0] and "truncated or corrupt" in err[0]


def test_a_partial_details_file_is_reported_as_partial(details, tmp_path, capsys):
    """Rows left out: the rest is read, the run said partial, a problem whose twin is missing
    counted in a, not in A, and named."""
    found = pinned("winogrande")
    twin_of = {}
    for schema in found.schemas:
        if len(schema.problems) == 2:
            a, b = (p.uid for p in schema.problems)
            twin_of[a], twin_of[b] = b, a
    uid = {k: place.uid for k, place in found.places.items()}
    dropped: list[str] = []

    def keep(rows):
        out = []
        for row in rows:
            problem = uid[found.key(row["example"])]
            if problem in twin_of and len(dropped) < 3 and twin_of[problem] not in dropped:
                dropped.append(problem)
                continue
            out.append(row)
        return out

    path = _details_copy(details, tmp_path / "details_org__part", keep)
    run = sources.load(str(path))
    task = run.tasks["winogrande"]
    assert task.partial and task.origin is not None and task.origin.read == 1264
    assert sorted(task.origin.apart) == sorted(twin_of[d] for d in dropped)
    assert len(run.tasks["winogrande (twin pairs)"].docs) == 281
    notes = run.notes()
    assert any("partial: " in n and "holds 1,264 of the 1,267 problems" in n for n in notes)
    assert any("3 problem(s) whose schema partner is not in the run, counted in a and not in A"
               in n for n in notes)  # fmt: skip
    out = tmp_path / "report"
    code, err = _report(str(path), "--out", str(out), capsys=capsys)
    assert code == 0, err
    assert "holds 1,264 of the 1,267 problems" in (out / "report.md").read_text()


def test_a_details_file_written_as_text_reads_to_the_same_outcomes(details, tmp_path):
    """lighteval writes every column as its text when it cannot write one as it is
    (``"[-1.5, -2.25]"``, ``"{'acc': 1.0}"``, ``"0"``): read from that text, the same run."""
    import pyarrow as pa

    table = pq.read_table(details)
    text = pa.table({name: pa.array([str(v) for v in table.column(name).to_pylist()], pa.string())
                     for name in table.column_names})  # fmt: skip
    path = tmp_path / "details_org__text" / DATE / DETAILS
    path.parent.mkdir(parents=True)
    pq.write_table(text, path)
    assert pq.read_schema(path).field("metrics").type == pa.string()
    theirs, ours = sources.load(str(details)), sources.load(str(path))
    assert outcomes(ours.tasks["winogrande"]) == outcomes(theirs.tasks["winogrande"])
    assert ours.notes() == []


def test_rows_with_a_nan_log_likelihood_are_named_and_left_out(details, tmp_path, capsys):
    """A NaN log-likelihood is no score: its problem has no verdict (not the option lm-eval's
    argmax then picks), it and its schema leave a and A, and a note names it."""
    found = pinned("winogrande")

    def nan(rows):
        for row in rows[3:5]:
            row["predictions"] = [float("nan"), row["predictions"][1]]
        return rows

    path = _details_copy(details, tmp_path / "details_org__nan", nan)
    rows = pq.read_table(path).to_pylist()
    uids = {found.find((row["example"],)).uid for row in rows[3:5]}
    run = sources.load(str(path))
    task = run.tasks["winogrande"]
    assert task.origin is not None and set(task.origin.undefined) == uids
    assert task.origin.read == 1265 and task.partial
    [note] = [n for n in run.notes() if "NaN" in n]
    assert note.startswith("org__nan, winogrande: 2 problem(s) have a NaN log-likelihood in ")
    assert "no verdict, so they and their schemas are left out of a and A: " in note
    assert all(uid in note for uid in uids)
    code, err = _report(str(path), "--out", str(tmp_path / "report"), capsys=capsys)
    assert code == 0, err


def test_a_details_file_saved_under_another_name_is_read(details, tmp_path):
    """``load_dataset(...).to_parquet("train.parquet")``: a details file by its columns and rows,
    whatever its name; num_fewshot from its ``num_effective_few_shots`` column."""
    folder = tmp_path / "saved"
    folder.mkdir()
    shutil.copy(details, folder / "train-00000-of-00001.parquet")
    pq.write_table(pq.read_table(details).select(["example", "instruction"]),
                   folder / "other.parquet")  # fmt: skip
    for given in (folder, folder / "train-00000-of-00001.parquet"):
        run = sources.load(str(given))
        task = run.tasks["winogrande"]
        assert outcomes(task) == outcomes(sources.load(str(details)).tasks["winogrande"])
        assert task.origin is not None and task.origin.num_fewshot == 0
    named_otherwise = tmp_path / "details_harness|hellaswag|10_2023-07-19T15-58-12.parquet"
    shutil.copy(details, named_otherwise)
    with pytest.raises(RunError, match="not a winogrande details file"):
        sources.load(str(named_otherwise))


# -- the Hub --------------------------------------------------------------------------------------
def test_details_from_a_hub_dataset_repository(details, tmp_path):
    """Through the real huggingface_hub client and HF_ENDPOINT: the report of
    ``hub:<repo>``, and the leaderboard's ``--details-repo``, read the repository's newest
    winogrande details file (an older run and another task's file beside it are left)."""
    repo_dir = tmp_path / "repo"
    shutil.copytree(details.parent.parent, repo_dir)
    older = repo_dir / "2023-07-19T15:58:12.174583"
    older.mkdir()
    (older / "details_harness|winogrande|5_2023-07-19T15:58:12.174583.parquet").write_bytes(b"x")
    (older / "details_harness|hellaswag|10_2023-07-19T15:58:12.174583.parquet").write_bytes(b"x")
    env = {**os.environ, "HF_HOME": str(tmp_path / "hf"), "HF_HUB_OFFLINE": "0",
           "PYTHONPATH": str(REPO)}  # fmt: skip
    with HubServer() as hub:
        hub.push("open-llm-leaderboard-old/details_org__tiny", repo_dir, dataset=True)
        env["HF_ENDPOINT"] = hub.url
        command = [sys.executable, "-m", "wsc_tasks.cli"]
        report = subprocess.run(
            [*command, "report", "hub:open-llm-leaderboard-old/details_org__tiny", "--quiet",
             "--iters", str(ITERS), "--out", str(tmp_path / "report")],
            env=env, capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        board = subprocess.run(
            [*command, "leaderboard", str(tmp_path / "board"), "--iters", str(ITERS),
             "--details-repo", "open-llm-leaderboard-old/details_org__tiny",
             "--details-repo", "open-llm-leaderboard-old/details_org__absent"],
            env=env, capture_output=True, text=True, timeout=300,
        )  # fmt: skip
    assert report.returncode == 0, report.stderr
    text = (tmp_path / "report" / "report.md").read_text()
    assert "read from `open-llm-leaderboard-old/details_org__tiny@" in text
    assert DETAILS.replace("|", "\\|") in text or DETAILS in text
    # one repository missing: the board of the others, and one line for it
    assert board.returncode == 0, board.stderr
    said = [line for line in board.stderr.splitlines() if line.startswith("wsc-tasks leaderboard")]
    assert said[1].startswith(
        "wsc-tasks leaderboard: 2/2: not fetched: hub:open-llm-leaderboard-old/details_org__absent"
        " (on "
    ), said
    assert "no such dataset repository" in said[1]
    assert (tmp_path / "board" / "org__tiny" / DATE / DETAILS).is_file()
    written = (tmp_path / "board" / "leaderboard.md").read_text().replace("\\_", "_")
    assert (
        "| org__tiny | Open LLM Leaderboard (lm-eval) winogrande, partial scoring, 0-shot | 1 |"
        in (written)
    )  # ranked
    assert "| org__absent | not fetched: hub:open-llm-leaderboard-old/details_org__absent (on " in (
        written
    )  # listed with the models without a result


# -- the leaderboard ------------------------------------------------------------------------------
def test_a_leaderboard_ranks_archived_details_beside_this_packages_runs(
    run_dir, details, tmp_path, capsys
):
    """A sweep's model (``done.json``, ``lm_eval/``: this package's ``winogrande_twins``) and two
    details files, one of the same run: the same A, a paired difference of exactly 0; the foreign
    rows say who scored them and that their controls and consistency are absent."""
    out = tmp_path / "board"
    own = out / "tiny-gpt2"
    shutil.copytree(run_dir, own / "lm_eval")
    (own / "done.json").write_text("{}")
    shutil.copytree(details.parent.parent, out / "org__tiny")

    def swapped(rows):
        label = {k: p.label for k, p in pinned("winogrande").places.items()}
        rng = random.Random(1)
        for row in rows:
            if rng.random() < 0.4:
                row["predictions"] = row["predictions"][::-1]
                pred = 0 if row["predictions"][0] >= row["predictions"][1] else 1
                row["acc"] = float(pred == label[pinned("winogrande").key(row["example"])])
        return rows

    _details_copy(details, out / "org__other", swapped)
    code = cli(["leaderboard", str(out), "--iters", str(ITERS), "--rank-task", "winogrande_twins"])
    assert code == 0, capsys.readouterr().err
    board = leaderboard.build(leaderboard.model_folders(out), out, "winogrande_twins", ITERS, 0)
    entries = {e.label: e for e in board.entries}
    assert set(entries) == {"tiny-gpt2", "org__tiny", "org__other"}
    # a sweep's leaderboard ranks them beside its own models too
    assert leaderboard.made_elsewhere(out, ["tiny-gpt2"]) == ["org__other", "org__tiny"]
    mine, theirs = entries["tiny-gpt2"], entries["org__tiny"]
    assert mine.A == theirs.A and mine.a == theirs.a
    delta = board.tables.ranking  # the paired difference of the two equal runs is 0
    paired = leaderboard.Board("winogrande_twins", ITERS, 0).paired(mine.run, theirs.run)
    assert paired is not None and paired.estimate.value == 0.0
    rows = {row[0]: row for row in delta.rows}
    column = delta.columns.index
    assert rows["org__tiny"][column("scored by")] == (
        "Open LLM Leaderboard (lm-eval) winogrande, partial scoring, 0-shot"
    )
    assert rows["tiny-gpt2"][column("scored by")] == "wsc-tasks"
    assert rows["tiny-gpt2"][column("controls above chance")] is None  # not foreign: none run
    assert rows["org__tiny"][column("controls above chance")] == "absent"
    assert rows["org__tiny"][column("lowest C")] == "absent"
    said = dict(board.findings)["org__other"]
    assert "control baselines, perturbations and consistency absent (Open LLM Leaderboard" in said
    text = (out / "leaderboard.md").read_text()
    assert "| org\\_\\_tiny | Open LLM Leaderboard (lm-eval) winogrande, partial scoring" in text
    # each foreign run read once: its figures kept beside it, keyed by its files
    assert list((out / "org__tiny").glob("wsc_leaderboard_winogrande_twins_R*_s0.json"))
    again = leaderboard.build(leaderboard.model_folders(out), out, "winogrande_twins", ITERS, 0)
    assert [(e.label, e.A, e.a) for e in again.entries] == [
        (e.label, e.A, e.a) for e in board.entries
    ]


def test_a_board_of_runs_made_elsewhere_ranks_on_winograndes_twin_pairs(details, tmp_path):
    out = tmp_path / "board"
    shutil.copytree(details.parent.parent, out / "org__tiny")
    names = leaderboard.model_folders(out)
    assert names == ["org__tiny"] and leaderboard.default_task(out, names) == "winogrande_twins"
