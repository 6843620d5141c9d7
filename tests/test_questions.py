"""The schema tasks asked as questions (``<dataset>_chat``, ``wsc_group_chat``): the parser on a
table of real answer forms, the prompt, the metric records against their oracles, a stub model
that always answers "A" (a = 0.5, flagged by the option order), bad answers from a served chat
model counted and named (no text, a refusal, an HTTP error), the chat template, system
instruction and few-shot examples as lm-eval applies them (``--model hf --apply_chat_template``),
and the report and leaderboard that show these runs apart from the log-likelihood ones. The real
llama.cpp server is in ``tests/test_served.py``."""

from __future__ import annotations

import csv
import hashlib
import json
import math
import re
from pathlib import Path

import json_server
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from lm_eval.api.model import LM
from lm_eval.api.registry import register_model

from wsc_tasks.cli import main as cli
from wsc_tasks.data import catalog
from wsc_tasks.data.problems import Problem
from wsc_tasks.metrics import questions as answers
from wsc_tasks.metrics import registry
from wsc_tasks.report.symbols import GLOSSARY
from wsc_tasks.scoring import questions
from wsc_tasks.serving.generation import NO_ANSWER
from wsc_tasks.tasks import flags

OPTIONS = ("the trophy", "the suitcase")

# answers models give, and what the parser reads: (text, letter or None, form)
TABLE = [
    ("B", 1, "letter"),
    ("A", 0, "letter"),
    ("b.", 1, "letter"),
    ("(A)", 0, "letter"),
    ("**B**", 1, "letter"),
    (" B\n", 1, "letter"),
    ("B: the suitcase", 1, "letter"),
    ("B. the demonstrators", 1, "letter"),
    ("A) the trophy is too large", 0, "letter"),
    ("Option B", 1, "letter"),
    ("option a", 0, "letter"),
    ("Answer: B", 1, "letter"),
    ("The answer is (A).", 0, "letter"),
    ("The correct answer is B.", 1, "letter"),
    ("I think B.", 1, "letter"),
    ("A is correct.", 0, "letter"),
    ("B (the trophy)", 1, "letter"),  # a letter outranks words
    ("I'm not sure, but B", 1, "letter"),  # and a refusal
    ("the suitcase", 1, "words"),
    ("Suitcase", 1, "words"),
    ("The trophy.", 0, "words"),
    ("The blank refers to the suitcase.", 1, "words"),
    ("It is the trophy that is too large.", 0, "words"),
    ("A trophy is too large.", 0, "words"),  # "A" the article
    ("The answer is a suitcase", 1, "words"),  # "a" the article
    ("A or B", None, "both"),
    ("A and B", None, "both"),
    ("Both the trophy and the suitcase.", None, "both"),
    ("The trophy doesn't fit in the suitcase.", None, "both"),
    ("I'm sorry, but I can't help with that.", None, "refusal"),
    ("I don't know.", None, "refusal"),
    ("It cannot be determined from the sentence.", None, "refusal"),
    ("Neither.", None, "refusal"),
    ("As an AI, I have no opinion on this.", None, "refusal"),
    ("", None, "empty"),
    ("   \n", None, "empty"),
    ("C", None, "none"),
    ("The box.", None, "none"),
    ("Yes", None, "none"),
]


@pytest.mark.parametrize(("text", "letter", "form"), TABLE)
def test_the_parser_reads_the_forms_models_give(text, letter, form):
    found = questions.read(text, OPTIONS)
    assert (found.letter, found.form) == (letter, form)
    assert found.answered is (form in questions.ANSWERED)
    assert (form in questions.UNANSWERED) is (letter is None)


def test_the_parser_reads_the_longer_option_as_itself():
    assert questions.read("the old man", ("the man", "the old man")).letter == 1
    assert questions.read("the man", ("the man", "the old man")).letter == 0
    assert questions.read("Sarah", ("Maria", "Sarah")).letter == 1
    assert questions.read("the woman", ("the man", "the woman")).letter == 1  # not "man"


def test_the_prompt_shows_both_orders_and_two_blanks():
    one = Problem("p", ("The trophy doesn't fit because ", " is too big."), (("it",), ("that",)), 0)
    given_order = questions.prompt(one, 0)
    assert given_order.startswith("The trophy doesn't fit because _ is too big.\n\n")
    assert "A. it\nB. that\n" in given_order
    assert given_order.endswith("Answer with A or B.\nAnswer:")
    assert "A. that\nB. it\n" in questions.prompt(one, 1)
    assert questions.shown(1) == (1, 0)
    two = Problem("q", ("", " chase ", "."), (("cats", "mice"), ("mice", "cats")), 0)
    text = questions.prompt(two, 0)
    assert "_ chase _." in text and "two blanks" in text and "A. cats … mice" in text


# -- the records of the answers ------------------------------------------------------------------
def _answers(draw_chosen: list[int], n: int) -> answers.Answers:
    chosen = [c if c >= 0 else None for c in draw_chosen]
    return answers.answers(chosen, [p % 2 for p in range(n)] * 2, [0] * n + [1] * n,
                           list(range(n)) * 2, ["letter"] * (2 * n))  # fmt: skip


documents = st.integers(1, 3).flatmap(
    lambda n: st.lists(st.integers(-1, 1), min_size=2 * n, max_size=2 * n).map(
        lambda chosen: _answers(chosen, n)
    )
)
RECORDS = [m.name for m in registry.select(value=registry.ANSWERS) if m.form is not None]


@pytest.mark.parametrize("name", RECORDS)
@settings(max_examples=60, deadline=None)
@given(docs=st.lists(documents, max_size=20))
def test_an_answer_record_is_its_oracle(name, docs):
    record = registry.METRICS[name]
    expected = record.oracle(docs)
    for found in (record.form(docs), registry.bind(name)(docs)):
        assert (math.isnan(found) and math.isnan(expected)) or found == pytest.approx(expected)
    if docs:
        assert registry.by_name(name, docs[0]) is record.form


def test_the_answer_records_are_named_explained_and_printed_by_question_tasks():
    for record in registry.select(value=registry.ANSWERS):
        assert registry.Key.parse(record.name) == registry.Key(record.name)
        assert GLOSSARY[record.symbol] == record.description
    assert registry.headline(registry.TaskKind.QUESTION) == {
        "acc", "schema_acc", "unanswered", "first_option", "order_consistency",
    }  # fmt: skip
    keys = registry.parse_all(["acc", "schema_acc", "unanswered", "first_option"]).values()
    assert registry.task_kind(keys) is registry.TaskKind.QUESTION
    always_a = _answers([0, 0, 1, 1], 2)  # "A" is option 0 as given, option 1 swapped
    assert answers.first_option_parts(always_a) == (4.0, 4.0)
    assert answers.order_consistency_parts(always_a) == (0.0, 2.0)
    assert answers.unanswered_parts(_answers([0, -1, 0, -1], 2)) == (2.0, 4.0)


# -- a stub model that always answers "A" --------------------------------------------------------
@register_model("wsc-test-always-a")
class AlwaysA(LM):
    """Answers every question "A"; gives no log-likelihood."""

    def __init__(self, **kwargs: object) -> None:
        super().__init__()

    def loglikelihood(self, requests, disable_tqdm=False):
        raise NotImplementedError("no log-likelihoods")

    def loglikelihood_rolling(self, requests, disable_tqdm=False):
        raise NotImplementedError("no log-likelihoods")

    def generate_until(self, requests, disable_tqdm=False):
        return ["A" for _ in requests]


def _results(folder: Path) -> dict:
    [path] = folder.rglob("results_*.json")
    return json.loads(path.read_text())


@pytest.fixture(scope="module")
def always_a(data_dir, tmp_path_factory) -> Path:
    """The stub asked every question task in one command: the group."""
    out = tmp_path_factory.mktemp("always-a")
    argv = ["run", "--model", "wsc-test-always-a", "--model_args", "seed=1", "--tasks",
            "wsc_group_chat", "--log_samples", "--output_path", str(out)]  # fmt: skip
    assert cli(argv) == 0
    return next(p for p in out.iterdir() if p.is_dir())


def test_a_model_that_always_answers_a_gets_half_and_the_order_flags_it(always_a, tmp_path):
    results = _results(always_a)["results"]
    asked = {name for name in results if name.endswith("_chat")} - {"wsc_group_chat"}
    assert len(asked) == len(catalog.SPECS) + 3  # the group: every question task
    for found in (results[name] for name in asked):  # both orders asked: half, whatever the data
        assert found["acc,none"] == 0.5 and found["first_option,none"] == 1.0
        assert found["order_consistency,none"] == 0.0 and found["unanswered,none"] == 0.0
    found = results["wsc266_chat"]
    assert found["schema_acc,none"] == 0.0 and "n_asked,none" not in found  # counts: the samples
    out = tmp_path / "report"
    assert cli(["report", str(always_a), "--out", str(out), "--iters", "200"]) == 0
    text = (out / "report.md").read_text()
    findings = text.split("## Findings", 1)[1].split("\n## ", 1)[0]
    assert "Asked as questions (a different formulation" in findings
    assert "Its answers follow the position of the options" in findings
    assert "f_A = 1.000 [" in findings and "more often than half the time" in findings
    assert f"and on {len(asked) - 3} more of its {len(asked)} question tasks" in findings
    assert "a = 0.500 [" in findings and "A = 0.000 [" in findings
    section = text.split("## Asked as questions", 1)[1].split("\n## ", 1)[0]
    assert "| wsc266_chat |" in section and "| wsc266_switched_chat |" in section
    assert "| wsc-test-always-a | wsc266_chat | full | 133 |" in section and "0 of 532" in section
    assert "| wsc266_switched_chat | 70 | 0.000 [" in section  # against the same schemas
    overview = text.split("## Accuracy of every task, by role", 1)[1].split("\n## ", 1)[0]
    assert "Skipped:" in overview  # the log-likelihood tasks' table: none ran
    for symbol in ("f_A", "c_o", "u"):
        assert f"| {symbol} |" in text.split("## Glossary", 1)[1]


def test_the_leaderboard_shows_the_questions_apart_and_ranks_none(always_a, tmp_path):
    from wsc_tasks.leaderboard import build, save

    board = build([always_a.name], always_a.parent, "wsc266", 200, 1)
    assert board.ranked == [] and board.tables.ranking.rows == []
    [row] = board.tables.questions.rows
    assert row[0] == always_a.name and row[1] == "wsc266_chat"
    assert row[6].estimate.value == 1.0 and row[6].estimate.null == 0.5  # f_A against 0.5
    assert "not ranked" in board.tables.questions.title
    written = save(board, tmp_path)
    md = written[0].read_text()
    assert "asked as questions" in md and "| wsc266_chat |" in md
    with written[1].open() as handle:
        [line] = list(csv.DictReader(handle))
    assert line["task (questions)"] == "wsc266_chat" and float(line["f_A"]) == 1.0
    assert line["status"] == "no samples of wsc266"


# -- a served chat model whose answers go wrong in each way ---------------------------------------
BEHAVIOURS = ("letter", "words", "empty", "null", "refusal", "error")


def behaviour(content: str) -> str:
    """What the stub server does with a question: fixed by its text."""
    digest = int(hashlib.sha256(content.encode()).hexdigest(), 16)
    return BEHAVIOURS[digest % len(BEHAVIOURS)]


def _chat_server(mode: str = "mixed"):
    seen: list[dict] = []

    def answer(path: str, body: dict):
        seen.append(body)
        content = body["messages"][-1]["content"]
        does = behaviour(content) if mode == "mixed" else mode
        text = {"letter": "B", "words": OPTION_LINE.search(content)[1], "empty": "",
                "null": None, "refusal": REFUSAL}.get(does)  # fmt: skip
        message = {"role": "assistant", "content": text}
        if does == "error":
            return 500, {"error": "overloaded"}
        return 200, {"choices": [{"index": 0, "message": message}]}

    httpd, base = json_server.serve(answer)
    return httpd, f"{base}/v1/chat/completions", seen


OPTION_LINE = re.compile(r"\nA\. ([^\n]+)\n")
REFUSAL = "I'm sorry, I can't help with that."


def _chat_argv(url: str, out: Path, *extra: str) -> list[str]:
    return ["run", "--model", "local-chat-completions", "--model_args",
            f"model=stub,base_url={url},max_retries=1", "--tasks", "wsc266_chat", "--limit", "3",
            "--log_samples", "--output_path", str(out), *extra]  # fmt: skip


def test_bad_answers_from_a_server_are_counted_and_named(data_dir, tmp_path, capsys):
    httpd, url, seen = _chat_server()
    try:
        assert cli(_chat_argv(url, tmp_path, "--apply_chat_template")) == 0
    finally:
        httpd.shutdown()
        httpd.server_close()
    printed = capsys.readouterr().out
    folder = next(p for p in tmp_path.iterdir() if p.is_dir())
    data = _results(folder)
    found = data["results"]["wsc266_chat"]
    [samples] = folder.glob("samples_wsc266_chat_*.jsonl")
    rows = [json.loads(line) for line in samples.read_text().splitlines()]
    # each prompt as lm-eval logs it: its chat messages as JSON, in a list (a JsonChatStr)
    asked = [arg["arg_0"][0] for row in rows for arg in row["arguments"].values()]
    expected = [behaviour(json.loads(prompt)[-1]["content"]) for prompt in asked]
    unanswered = {"empty": 0, "null": 0, "refusal": 0, "error": 0}
    for does in expected:
        if does in unanswered:
            unanswered[does] += 1
    assert len(asked) == 12 and sum(unanswered.values()) > 0
    assert found["unanswered,none"] == pytest.approx(sum(unanswered.values()) / 12)
    note = next(n for n in data["configs"]["wsc266_chat"]["metadata"]["notes"] if "unanswered" in n)
    assert note.startswith(f"{sum(unanswered.values())} of 12 questions unanswered, counted wrong")
    empty = unanswered["empty"] + unanswered["null"]
    for count, words in ((empty, "no text"), (unanswered["refusal"], "a refusal"),
                         (unanswered["error"], "no answer from the server")):  # fmt: skip
        assert (f"{count} {words}" in note) is (count > 0), note
    assert note in printed  # under lm-eval's table
    errors = [r[0] for row in rows for r in row["resps"] if r[0].startswith(NO_ANSWER)]
    assert len(errors) == unanswered["error"]
    assert all("(HTTPError: 500 Server Error" in error for error in errors)
    answered = [json.loads(q)[-1]["content"] for q, d in zip(asked, expected, strict=True)
                if d in ("letter", "words")]  # fmt: skip
    assert len(answered) == 12 - sum(unanswered.values())
    assert all(body["temperature"] == 0 and body["max_tokens"] == 32 for body in seen)


def test_a_server_that_answers_nothing_stops_the_run_in_one_line(data_dir, tmp_path, capsys):
    httpd, url, _ = _chat_server("error")
    try:
        assert cli(_chat_argv(url, tmp_path, "--apply_chat_template")) == 2
    finally:
        httpd.shutdown()
        httpd.server_close()
    line = capsys.readouterr().err.strip().splitlines()[-1]  # after lm-eval's progress bar
    said = line[line.index("wsc-tasks: error: ") :]
    assert said.startswith("wsc-tasks: error: task wsc266_chat: 5 questions in a row got no")
    assert "HTTPError: 500" in said and "is the server up?" in said


def test_a_chat_model_without_the_chat_template_is_told_the_flag(data_dir, tmp_path, capsys):
    httpd, url, seen = _chat_server("letter")
    try:
        assert cli(_chat_argv(url, tmp_path)) == 2
    finally:
        httpd.shutdown()
        httpd.server_close()
    line = capsys.readouterr().err.strip().splitlines()[-1]
    assert "LocalChatCompletion takes chat messages" in line
    assert "; run with --apply_chat_template" in line
    assert seen == []  # before any request


# -- lm-eval's prompt machinery: the chat template, an instruction, examples -----------------------
def test_hf_with_the_chat_template_an_instruction_and_examples(data_dir, chat_gpt2_dir, tmp_path):
    argv = ["run", "--model", "hf", "--model_args", f"pretrained={chat_gpt2_dir}", "--tasks",
            "wsc266_chat", "--limit", "2", "--apply_chat_template", "--system_instruction",
            "Answer briefly.", "--num_fewshot", "2", "--fewshot_as_multiturn", "--log_samples",
            "--output_path", str(tmp_path), "--gen_kwargs", "max_gen_toks=4"]  # fmt: skip
    assert cli(argv) == 0
    folder = next(p for p in tmp_path.iterdir() if p.is_dir())
    data = _results(folder)
    assert data["config"]["model"] == "hf" and data["n-shot"]["wsc266_chat"] == 2
    [samples] = folder.glob("samples_wsc266_chat_*.jsonl")
    rows = [json.loads(line) for line in samples.read_text().splitlines()]
    for row in rows:
        prompts = [arg["arg_0"] for arg in row["arguments"].values()]
        assert len(prompts) == 4 and len(set(prompts)) == 4
        for prompt in prompts:
            assert prompt.startswith("<|system|>Answer briefly.\n<|user|>")
            assert prompt.endswith("Answer with A or B.\nAnswer:\n<|assistant|>")
            assert prompt.count("<|user|>") == 3 and prompt.count("<|assistant|>") == 3
            shots = prompt.split("<|assistant|>")[1:3]
            assert all(shot[0] in "AB" for shot in shots)  # each example answered with a letter
            first = row["doc"]["problems"][0]["segments"][0]
            assert prompt.count(first) == 1  # no example from the schema asked
        assert row["arguments"]["gen_args_0"]["arg_1"]["max_gen_toks"] == 4
    found = data["results"]["wsc266_chat"]
    assert 0 <= found["unanswered,none"] <= 1 and len(rows) == 2


# -- the flags: taken by the question tasks, refused by the log-likelihood ones --------------------
@pytest.mark.parametrize(
    ("tasks", "refused"),
    [("wsc266_chat", False), ("wsc_group_chat", False), ("wsc266", True),
     ("wsc266,wsc266_chat", True), (None, True)],
)  # fmt: skip
def test_wsc_tasks_run_takes_the_chat_template_for_question_tasks_only(tasks, refused):
    from wsc_tasks.cli.run import our_kinds

    argv = ["--apply_chat_template", "--num_fewshot", "3"]
    argv += ["--tasks", tasks] if tasks else []
    scored, prompted = our_kinds(argv)
    assert prompted is (tasks is not None and "chat" in tasks)
    if refused:
        with pytest.raises(flags.UnsupportedFlag, match="the question tasks"):
            flags.check_argv(argv, scored=scored, prompted=prompted)
    else:
        flags.check_argv(argv, scored=scored, prompted=prompted)
        flags.check_argv([*argv, "--gen_kwargs", "max_gen_toks=8"], scored=scored,
                         prompted=prompted)  # fmt: skip


def test_the_group_runs_every_question_task_and_none_of_the_others():
    from wsc_tasks.cli.task_names import output_types

    types = output_types()
    assert types["wsc_group_chat"] == {"generate_until"}
    assert types["wsc_group"] == {"loglikelihood"}
    chat = {name for name, found in types.items() if found == {"generate_until"}}
    assert {f"{name}_chat" for name in catalog.SPECS} < chat - {"wsc_group_chat"}
    assert len(chat) == len(catalog.SPECS) + 4  # the dyads of the "That SCHEMA" wrapper, the group


def test_lm_evals_answer_cache_answers_the_questions_again(
    data_dir, chat_gpt2_dir, tmp_path, caplog
):
    """``--use_cache``: the model's own generate_until writes each answer; a second run reads all
    of them back (the path keyed by the model, as for the log-likelihood tasks) and agrees."""
    answers = []
    for run in ("first", "again"):
        out = tmp_path / run
        argv = ["run", "--model", "hf", "--model_args", f"pretrained={chat_gpt2_dir}", "--tasks",
                "wsc266_chat", "--limit", "1", "--apply_chat_template", "--gen_kwargs",
                "max_gen_toks=3", "--use_cache", str(tmp_path / "cache"), "--log_samples",
                "--output_path", str(out)]  # fmt: skip
        caplog.clear()
        assert cli(argv) == 0
        [samples] = out.rglob("samples_wsc266_chat_*.jsonl")
        answers.append(json.loads(samples.read_text().splitlines()[0])["resps"])
    assert "lm-eval's answer cache (--use_cache) answered 4 of 4 questions" in caplog.text
    assert answers[0] == answers[1]
