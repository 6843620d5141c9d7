"""Avoided: lm-eval's request cache serves one setup's or one selection's requests to another.

lm-eval's ``--cache_requests`` saves each task's built requests in a file named by the task,
few-shot count, rank, world size, chat template, system prompt and the tokenizer name
(``Task.build_all_requests``): not by the task's metadata, nor by the documents chosen. A run
with ``--samples`` saves the chosen documents' requests under the name of the whole task, and a
later run takes the first N of them as documents 0 to N-1 (silently: another document's requests
scored as this one's), or fails in ``zip()``; a run with other ``--metadata`` reads the requests
of the first. This package's tasks name theirs by what the requests follow (metadata, tokenizer
encodings, family, the package's source, the documents chosen: ``tasks.request_cache``, through
lm-eval's own ``tokenizer_name`` argument), and check the requests lm-eval reads back against
their documents, building them again (and saying so) when they do not match. Upstream, the file
name could include the task config's metadata and the selection.
"""

from __future__ import annotations

from wsc_tasks.lm_eval_fixes.base import AVOIDED, Fix


def lm_eval_names_its_request_cache_without_the_metadata_or_selection() -> bool:
    """lm-eval's ``Task.build_all_requests`` names the same request-cache file for two setups of a
    task that differ in their metadata, and for two selections of its documents."""
    from types import SimpleNamespace
    from unittest import mock

    from lm_eval.api import task as lm_task

    class Named(Exception):
        pass

    names: list[str] = []

    def load_from_cache(file_name: str, cache: bool) -> None:
        names.append(file_name)
        raise Named  # the name is all this check needs: no document is read

    for scoring, samples in (("partial", [1]), ("all", [2])):
        config = SimpleNamespace(task="t", num_fewshot=0, metadata={"scoring": scoring})
        task = SimpleNamespace(_config=config, config=config)
        with mock.patch.object(lm_task, "load_from_cache", load_from_cache):
            try:
                lm_task.Task.build_all_requests(task, cache_requests=True, samples=samples)
            except Named:
                pass
    return len(names) == 2 and names[0] == names[1]


FIX = Fix(
    "request_cache_names",
    AVOIDED,
    "--cache_requests names a task's saved requests without its metadata or the documents "
    "chosen, and reads them back for another setup or selection",
    "this package's tasks name their saved requests by what the requests follow and the "
    "documents chosen, and rebuild requests that do not match their documents",
    still_needed=lm_eval_names_its_request_cache_without_the_metadata_or_selection,
)
