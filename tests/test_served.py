"""Served models: lm-eval's ``local-completions`` against an OpenAI-compatible server on localhost.

The server here is a small stdlib HTTP server that answers ``/v1/completions`` with prompt
log-probabilities (``echo`` + ``logprobs``), as vLLM's and llama.cpp's servers do, computed by a
tiny random GPT-2 with GPT-2's real tokenizer. ``wsc266`` run through it must give the same
log-likelihoods, per request, as lm-eval's HF backend on the same model, and so the same metrics.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import lm_eval
import pytest
import torch
from lm_eval.tasks import TaskManager

from wsc_tasks.paths import include_path

pytestmark = pytest.mark.slow

LIMIT = 6


def _completion(model, tokenizer, ids: list[int]) -> dict:
    """One choice: the prompt echoed with each token's log-probability, plus one greedy token."""
    with torch.no_grad():
        lp = torch.log_softmax(model(torch.tensor([ids])).logits[0].float(), dim=-1)
    token_lps: list[float | None] = [None]
    tops: list[dict[str, float] | None] = [None]
    for position in range(1, len(ids)):
        row = lp[position - 1]
        token_lps.append(float(row[ids[position]]))
        best = int(row.argmax())
        tops.append({tokenizer.convert_ids_to_tokens(best): float(row[best])})
    best = int(lp[-1].argmax())
    token_lps.append(float(lp[-1, best]))
    tops.append({tokenizer.convert_ids_to_tokens(best): float(lp[-1, best])})
    tokens = tokenizer.convert_ids_to_tokens([*ids, best])
    return {"text": "", "logprobs": {"tokens": tokens, "token_logprobs": token_lps,
                                     "top_logprobs": tops}}  # fmt: skip


@pytest.fixture(scope="module")
def server(tiny_gpt2_dir):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model = AutoModelForCausalLM.from_pretrained(tiny_gpt2_dir).eval()
    tokenizer = AutoTokenizer.from_pretrained(tiny_gpt2_dir)

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802 - the stdlib's name
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            prompts = body["prompt"]
            if prompts and isinstance(prompts[0], int):
                prompts = [prompts]
            if not (body.get("echo") and body.get("logprobs")):
                self.send_error(400, "this test server only returns prompt log-probabilities")
                return
            choices = [
                {"index": i, **_completion(model, tokenizer, list(p))}
                for i, p in enumerate(prompts)
            ]
            data = json.dumps({"object": "text_completion", "choices": choices}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args):
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/v1/completions"
    httpd.shutdown()
    httpd.server_close()


def _run(model: str, model_args: str, metadata: dict) -> dict:
    manager = TaskManager(include_path=str(include_path()), include_defaults=False,
                          metadata=metadata)  # fmt: skip
    return lm_eval.simple_evaluate(
        model=model, model_args=model_args, tasks=["wsc266"], task_manager=manager,
        device="cpu", batch_size=16, limit=LIMIT, log_samples=True, bootstrap_iters=0,
    )  # fmt: skip


def test_wsc266_through_local_completions_equals_hf(server, tiny_gpt2_dir, data_dir):
    served = _run(
        "local-completions",
        f"model=tiny-gpt2,base_url={server},tokenizer={tiny_gpt2_dir},"
        "tokenizer_backend=huggingface,num_concurrent=1,max_retries=1",
        {"tokenizer": str(tiny_gpt2_dir), "base_url": server},
    )
    local = _run("hf", f"pretrained={tiny_gpt2_dir}", {"pretrained": str(tiny_gpt2_dir)})
    assert served["configs"]["wsc266"]["metadata"]["first_token_prior"] == "webtext"
    pairs = 0
    for a, b in zip(served["samples"]["wsc266"], local["samples"]["wsc266"], strict=True):
        assert a["arguments"] == b["arguments"]
        for (x, _), (y, _) in zip(a["filtered_resps"], b["filtered_resps"], strict=True):
            assert abs(float(x) - float(y)) < 1e-3
            pairs += 1
    assert pairs > 50
    for metric, value in local["results"]["wsc266"].items():
        if metric.startswith(("acc", "schema_acc")) and "stderr" not in metric:
            assert served["results"]["wsc266"][metric] == value, metric
