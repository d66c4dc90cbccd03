"""The compiled-code cache knows every source the compiled code is built from.

The fast engine compiles the policy kernels of ``policies.py`` into its loop in
``engine_fast.py``; a cache stamped with one file would keep running an edited kernel
after the edit is reverted (or an old one after an edit). These tests edit a kernel in a
copy of the package and watch a fresh process pick the change up, with one cache folder
throughout.
"""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from planner.sim import jit

PACKAGE = Path(jit.__file__).resolve().parent  # planner/sim, where the compiled sources live
LIBRARY = PACKAGE.parent  # planner

PROBE = """
from planner.sim.engine_fast import run_fast
from planner.sim.scenario import Scenario
records = run_fast(Scenario(latency_ms=tuple(float(b) for b in range(1, 9)), sessions=4,
                            policy="batch-all", phases="aligned", duration_s=1.0))
print(sorted(set(records.batch_size.tolist())))
"""

ORIGINAL = """    over = size(slots) > params[LIMIT]
    count = _take_oldest(slots, int(params[LIMIT]) if over else 0, chosen)
    if not over:
        count = in_session_order(slots, chosen)"""
# batch-all that never runs more than one frame at a time
EDITED = ORIGINAL.replace(
    "        count = in_session_order(slots, chosen)",
    "        count = min(in_session_order(slots, chosen), 1)",
)


def _batches(root: Path, cache: Path) -> str:
    env = {**os.environ, "PYTHONPATH": str(root), "NUMBA_CACHE_DIR": str(cache)}
    done = subprocess.run(
        [sys.executable, "-c", PROBE],
        cwd=root,  # not the checkout: `python -c` puts the working directory on the path first
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_an_edited_policy_kernel_reaches_the_engine_that_compiles_it_in(tmp_path: Path) -> None:
    root = tmp_path / "src"
    shutil.copytree(LIBRARY, root / "planner", ignore=shutil.ignore_patterns("__pycache__"))
    cache = tmp_path / "cache"
    policies = root / "planner" / "sim" / "policies.py"
    source = policies.read_text(encoding="utf-8")
    assert source.count(ORIGINAL) == 1

    before = _batches(root, cache)
    assert before != "[1]"  # batch-all runs several frames together here

    policies.write_text(source.replace(ORIGINAL, EDITED), encoding="utf-8")
    assert _batches(root, cache) == "[1]"

    policies.write_text(source, encoding="utf-8")
    assert _batches(root, cache) == before


def _uses_jit(path: Path) -> bool:
    """Whether the module compiles code: it imports the ``jit`` decorator (a module that
    only asks where the cache is compiles nothing)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return any(
        isinstance(node, ast.ImportFrom)
        and node.module == "planner.sim.jit"
        and any(alias.name == "jit" for alias in node.names)
        for node in ast.walk(tree)
    )


def test_the_cache_key_covers_every_module_that_compiles_code() -> None:
    users = {os.path.relpath(p, PACKAGE) for p in LIBRARY.rglob("*.py") if _uses_jit(p)}
    # The modules whose functions are compiled, and the jit module itself, are hashed.
    assert users | {"jit.py"} <= set(jit.COMPILED_SOURCES)
    for name in jit.COMPILED_SOURCES:
        assert (PACKAGE / name).is_file(), name
    assert "numba.njit(" not in "".join(
        p.read_text(encoding="utf-8") for p in LIBRARY.rglob("*.py") if p != PACKAGE / "jit.py"
    ), "compile through planner.sim.jit, whose cache knows every source"


@pytest.mark.parametrize("name", jit.COMPILED_SOURCES)
def test_each_compiled_source_changes_the_cache_folder(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    copy = tmp_path / "planner"
    shutil.copytree(PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setattr(jit, "PACKAGE", copy)
    jit.source_hash.cache_clear()
    try:
        before = jit.source_hash()
        with (copy / name).open("a", encoding="utf-8") as f:
            f.write("\n# edited\n")
        jit.source_hash.cache_clear()
        assert jit.source_hash() != before
    finally:
        jit.source_hash.cache_clear()
