"""``wsc_tasks.garbage_collection``: the cyclic garbage collector kept from walking again what a
process built (reading a run's samples), and handed everything back after."""

from __future__ import annotations

from wsc_tasks.garbage_collection import collect, survivors_frozen


class _Cycle:
    """An object in a reference cycle: only the cyclic collector frees it."""

    def __init__(self) -> None:
        self.me = self


def test_survivors_of_a_full_collection_are_frozen_while_the_block_runs():
    """A full collection inside the block freezes what survived it (the next walks only newer
    objects); on leaving, they are handed back, and a cycle that became garbage meanwhile is
    collected by the next full collection."""
    import gc
    import weakref

    assert gc.get_freeze_count() == 0
    with survivors_frozen() as engaged:
        assert engaged
        survivor = _Cycle()
        gone = weakref.ref(survivor)
        gc.collect()
        frozen = gc.get_freeze_count()
        assert frozen > 0  # the survivor among them
        del survivor
        gc.collect()
        assert gone() is not None  # frozen: not walked until the block ends
        fresh = _Cycle()
        fresh_ref = weakref.ref(fresh)
        del fresh
        gc.collect()
        assert fresh_ref() is None  # garbage made since the last freeze still goes
    assert gc.get_freeze_count() == 0
    gc.collect()
    assert gone() is None


def test_the_collector_is_left_alone_when_off_or_when_objects_are_frozen_already():
    import gc

    gc.disable()
    try:
        with survivors_frozen() as engaged:
            assert not engaged
            gc.collect()
            assert gc.get_freeze_count() == 0
    finally:
        gc.enable()
    gc.freeze()  # the process's own frozen objects
    try:
        frozen = gc.get_freeze_count()
        with survivors_frozen() as engaged:
            assert not engaged
            _Cycle()
            gc.collect()
        # none added and none handed back (unfreezing hands back all); reference counting may
        # have freed a few frozen objects meanwhile
        assert 0 < gc.get_freeze_count() <= frozen
    finally:
        gc.unfreeze()


def test_collect_walks_the_frozen_objects_and_the_block_freezes_the_survivors_again():
    """A worker's step ends with ``collect``: a cycle frozen during the step that is garbage now
    goes, and what the worker keeps is frozen again for the next step."""
    import gc
    import weakref

    with survivors_frozen():
        kept, step = _Cycle(), _Cycle()
        kept_ref, step_ref = weakref.ref(kept), weakref.ref(step)
        gc.collect()
        assert gc.get_freeze_count() > 0
        del step
        collect()
        assert step_ref() is None and kept_ref() is kept
        assert gc.get_freeze_count() > 0
    assert gc.get_freeze_count() == 0


def test_collect_outside_a_block_leaves_the_processs_frozen_objects_frozen():
    import gc

    gc.freeze()
    try:
        assert gc.get_freeze_count() > 0
        collect()
        assert gc.get_freeze_count() > 0
    finally:
        gc.unfreeze()
