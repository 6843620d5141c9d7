"""Fill lm-eval's request cache of a model from the samples of an earlier run of the same model.

Usage: python tools/prefill_cache.py CACHE_DB SAMPLES_DIR [SAMPLES_DIR ...]

Every logged sample holds its requests (``arguments``) and the model's answers (``resps``);
lm-eval's ``--use_cache`` looks answers up by a hash of the request. Writing the logged answers
under those hashes lets a later run of the same model (same weights, same lm-eval) recompute every
metric from the earlier forward passes and send only requests that are new to the model. Two runs
that disagree on a request's answer stop the script.
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
from pathlib import Path

from lm_eval.api.model import hash_args
from sqlitedict import SqliteDict


def answers(folder: Path) -> dict[str, tuple[float, bool]]:
    """Every logged request of ``folder``'s samples under lm-eval's cache key, with its answer."""
    out: dict[str, tuple[float, bool]] = {}
    for path in sorted(folder.rglob("samples_*.jsonl*")):
        opener = gzip.open if path.suffix == ".gz" else open
        with opener(path, "rt", encoding="utf-8") as handle:
            for line in handle:
                sample = json.loads(line)
                for i, resp in enumerate(sample["resps"]):
                    args = sample["arguments"][f"gen_args_{i}"]
                    request = (args["arg_0"], args["arg_1"])
                    value, greedy = resp[0]
                    answer = (float(value), greedy in (True, "True"))
                    key = hash_args("loglikelihood", request)
                    if out.setdefault(key, answer) != answer:
                        raise SystemExit(f"{path}: {request!r}: {answer}, before {out[key]}")
    return out


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("db", help="the model's cache file (<key>_rank0.db); made if absent")
    parser.add_argument("folders", nargs="+", help="lm-eval output folders with samples files")
    args = parser.parse_args(argv)
    db, folders = args.db, args.folders
    found: dict[str, tuple[float, bool]] = {}
    for folder in folders:
        for key, answer in answers(Path(folder)).items():
            if found.setdefault(key, answer) != answer:
                raise SystemExit(f"{folder}: a request answered differently in another folder")
    with SqliteDict(db, autocommit=False) as cache:
        for key, answer in found.items():
            cache[key] = answer
        cache.commit()
    print(f"{len(found)} distinct requests written to {db}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
