"""``planner compile``: the README's first command compiles the simulator before the
server starts, into the compiled-code cache the server then loads from."""

from __future__ import annotations

from pathlib import Path

from planner.sim.jit import cache_dir


def test_compile_fills_the_compiled_code_cache_and_says_where(cli) -> None:
    run = cli("compile")
    assert run.status == 0, run.err
    folder = cache_dir()
    assert str(folder) in run.out and run.out.startswith("simulator ready in ")
    # The loop every plan runs is there for the next process to load (index and code).
    loop = Path(folder) / "engine_fast"
    assert any(loop.glob("*.nbi")) and any(loop.glob("*.nbc"))


def test_compile_all_also_compiles_the_loop_of_a_server_that_queues_every_frame(cli) -> None:
    run = cli("compile", "--all")
    assert run.status == 0, run.err
    assert any((Path(cache_dir()) / "queue_all").glob("*.nbc"))
