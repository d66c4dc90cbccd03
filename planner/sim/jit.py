"""Compiled code: the one decorator the simulator uses, with a cache that knows every
source file the compiled code is built from.

Numba's on-disk cache stamps a function with the file it lives in (numba issue #1833),
but the engines compile kernels from other modules into their loops: after an edit to a
policy in ``policies.py``, the fast engine's loop in ``engine_fast.py`` would still load
its old machine code, with the old policy inside. So every function compiled through
``jit`` is cached under one directory named by the hash of all of ``COMPILED_SOURCES``
and stamped with that hash: an edit to any of them compiles everything again, and
reverting it finds the earlier machine code again.

Only functions of the compiled sources are cached: one compiled elsewhere (a policy a
test or a script registers) compiles in each process, since the hash does not know its
file.

The cache lives under ``NUMBA_CACHE_DIR`` when that is set, else in the per-user cache
directory (``~/.cache/gpu-seat-planner/numba`` on Linux). Where neither can be written,
functions compile in every process instead.

Without Numba installed (a bare GPU image that has only PyTorch and NumPy, where the
reference worker runs a load test), ``jit`` returns each function as it is: the same
source runs as plain Python, slower but with the same decisions, so the worker there asks
the very policy code the simulator compiles. The simulator itself needs Numba.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar, cast

try:
    import numba
    from numba.core import caching
except ModuleNotFoundError:  # a bare GPU image: kernels run as plain Python (see above)
    numba = None  # type: ignore[assignment]

F = TypeVar("F", bound=Callable[..., Any])

PACKAGE = Path(__file__).resolve().parent
COMPILED_SOURCES: tuple[str, ...] = (
    "jit.py",
    "pending.py",
    "policies.py",
    "queue_policies.py",
    "dispatch.py",
    "sharing/timeline.py",
    "batch_time.py",
    "cascade.py",
    "decode.py",
    "engine_fast.py",
    "queue_all.py",
)
"""Every module whose code ends up in compiled functions (a test checks the list against
the modules that use ``jit``)."""


@functools.cache
def source_hash() -> str:
    """SHA-256 of the compiled sources, names and contents, in a fixed order."""
    digest = hashlib.sha256()
    for name in COMPILED_SOURCES:
        digest.update(name.encode())
        digest.update(b"\0")
        digest.update((PACKAGE / name).read_bytes())
        digest.update(b"\0")
    return digest.hexdigest()


def cache_dir() -> Path:
    """Where compiled code is cached: one folder per version of the compiled sources."""
    configured = getattr(numba.config, "CACHE_DIR", "")
    if configured:
        root = Path(configured)
    else:
        import platformdirs

        root = Path(platformdirs.user_cache_dir("gpu-seat-planner")) / "numba"
    return root / f"planner-{source_hash()[:16]}"


class _Locator(caching._CacheLocator if numba is not None else object):  # type: ignore[misc]
    """Numba's cache locator for the planner's functions: ``cache_dir()``, stamped with
    the hash of every compiled source rather than the function's own file."""

    def __init__(self, py_func: Callable[..., Any], py_file: str) -> None:
        self._py_file = py_file  # Numba names it in its "cannot cache" warning
        self._lineno = py_func.__code__.co_firstlineno
        self._path = cache_dir() / Path(py_file).stem

    def get_cache_path(self) -> str:
        return str(self._path)

    def get_source_stamp(self) -> str:
        return source_hash()

    def get_disambiguator(self) -> str:
        return str(self._lineno)

    @classmethod
    def from_function(cls, py_func: Callable[..., Any], py_file: str) -> _Locator | None:
        if Path(py_file).resolve() not in {PACKAGE / name for name in COMPILED_SOURCES}:
            return None  # not a compiled source (a test's policy): the hash does not know it
        locator = cls(py_func, py_file)
        try:
            locator.ensure_cache_path()
        except OSError:
            return None
        return locator


class _CacheImpl(caching.CompileResultCacheImpl if numba is not None else object):  # type: ignore[misc]
    _locator_classes = [_Locator]  # noqa: RUF012 - numba's own class attribute


class _FunctionCache(caching.FunctionCache if numba is not None else object):  # type: ignore[misc]
    _impl_class = _CacheImpl


def jit(cached: bool = True, **options: Any) -> Callable[[F], F]:
    """``numba.njit(**options)`` with the planner's cache (see the module docstring).
    ``cached=False`` for code compiled for policies registered at run time
    (``planner.sim.dispatch``), which the sources do not describe: it compiles in each
    process."""

    def wrap(fn: F) -> F:
        if numba is None:
            return fn
        dispatcher: Any = numba.njit(**options)(fn)
        # What ``Dispatcher.enable_caching`` does, with our cache in place of Numba's; with
        # no writable cache folder, the function compiles in each process instead.
        if cached:
            with contextlib.suppress(RuntimeError):
                dispatcher._cache = _FunctionCache(fn)
        return cast(F, dispatcher)

    return wrap
