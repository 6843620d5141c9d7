"""Python's cyclic garbage collector kept from walking, again and again, what a process holds.

Each full collection walks every object the process holds, and one comes each time the
long-lived objects grow by a quarter: a process that builds millions of objects (lm-eval's
requests and results, a run's samples decoded into rows) pays for its own growth many times
over. ``survivors_frozen`` moves what survives each full collection to the collector's permanent
generation (``gc.freeze``) while a block runs, so the next one walks only what was made since;
at the end they are handed back (``gc.unfreeze``), and a cycle among them that became garbage
meanwhile goes at the next full collection. Reference counting frees objects as ever, and only
objects a collection found reachable are frozen. The collector is left alone when it is off or
when the process has frozen objects of its own. A block that runs step after step (a sweep's
worker, model after model) ends each with ``collect``: the frozen objects handed back and
walked once, so that a finished step's cycles go, and what survives frozen again for the next.
``paused`` turns it off for a block that makes many objects and no cycle (lines of JSON
decoded), where a collection could free nothing.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


def _freeze_after_full_collection(phase: str, info: dict[str, int]) -> None:
    """A ``gc.callbacks`` entry: after a full collection, freeze what survived it."""
    if phase == "stop" and info.get("generation") == 2:
        gc.freeze()


@contextmanager
def survivors_frozen() -> Iterator[bool]:
    """While the block runs, freeze the survivors of each full collection; yields whether it
    does (not when the collector is off or objects are frozen already, as in an enclosing
    block)."""
    engaged = (
        gc.isenabled()
        and gc.get_freeze_count() == 0
        and _freeze_after_full_collection not in gc.callbacks
    )
    if engaged:
        gc.callbacks.append(_freeze_after_full_collection)
    try:
        yield engaged
    finally:
        if engaged:
            gc.callbacks.remove(_freeze_after_full_collection)
            gc.unfreeze()


def collect() -> None:
    """A full collection of everything, the objects ``survivors_frozen`` froze included (handed
    back first, then frozen again by the block when they survive); outside such a block,
    ``gc.collect()``."""
    if _freeze_after_full_collection in gc.callbacks:
        gc.unfreeze()
    gc.collect()


@contextmanager
def paused() -> Iterator[None]:
    """No collection while the block runs (reference counting frees objects as ever): for a
    block that builds objects without cycles, which a collection would walk for nothing."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
