"""Pausing Python's cyclic garbage collector while bulk work builds many objects.

Reading a 5 MiB curve file makes about 150,000 points and rows, which the collector
would otherwise walk again and again as they pile up (it runs after every 700 or so
allocations that are not freed, and the older generations are walked whole): half the
time of an import went to that. None of those objects form cycles that need the
collector, so it is paused for the duration and runs again afterwards as it normally
would. Pauses nest, and from any thread: the collector runs again when the last one ends
(if it was running when the first began).
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

_lock = threading.Lock()
_depth = 0
_was_enabled = False


@contextmanager
def paused() -> Iterator[None]:
    """Run the body with the cyclic garbage collector paused (see the module docstring)."""
    global _depth, _was_enabled
    with _lock:
        if _depth == 0:
            _was_enabled = gc.isenabled()
            gc.disable()
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0 and _was_enabled:
                gc.enable()
