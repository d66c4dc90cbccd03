"""How long a new user waits for the first answer (the ``first_answer`` section of
``planner bench``).

Each figure comes from fresh processes with an empty compiled-code cache
(``NUMBA_CACHE_DIR`` pointing at a new folder) and a new store, as on a machine that has
never run the planner:

- ``cli_cold_s``: ``planner recommend`` for the dashboard's default plan (the built-in
  laptop curve, 512x288 FP16), from starting Python to the seat count, compile included;
  ``cli_warm_s`` the same command again, loading the compiled code from the cache.
- From a checkout with Playwright and Chromium: ``streamlit run app.py`` is started and a
  headless browser opens the Plan page; ``dashboard_first_headline_s`` is the time from
  that request to the final seat count on screen when the request comes the moment the
  server answers its health check (the worst case: the server compiles the simulator in
  the background as it starts, and this visitor waits for that), and
  ``dashboard_first_headline_after_3s_s`` when it comes 3 s later, as when a person opens
  the link the server printed. ``dashboard_next_visitor_s``: a second visitor.
- The README's first command compiles the simulator between installing the package and
  starting the dashboard (``planner compile``): ``compile_s`` is that step into an empty
  cache, ``first_answer_s`` the default plan in a process that then starts with the
  planner's modules loaded (as a running server has them) up to the seat count, against
  ``first_answer_target_s``; ``dashboard_after_compile_first_headline_s`` is the first
  visitor's wait on a dashboard started after that step, asking the moment it answers.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

from planner.bench.registry import Figures, section

CHECKOUT = Path(__file__).resolve().parents[2]  # planner/bench/ -> the checkout
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = (
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-quic",
    "--no-first-run",
)
HEADLINE = ".st-key-headline h1"
_TIMEOUT_S = 180.0
_COMPILE_TIMEOUT_S = 900.0  # a whole compile on a machine other work keeps busy

_CLI_PLAN = """
import json, time
start = time.perf_counter()
from planner.cli import main
imported = time.perf_counter()
main(["recommend", "--points", "1:9.82,2:20.36,3:32.71,4:46.15,8:103.77,16:221.25", "--json"])
print(json.dumps({"import_s": imported - start, "plan_s": time.perf_counter() - imported}))
"""


_FIRST_PLAN = """
import json, time
from planner.cli import build_parser, main
build_parser()  # every module a command loads, as a running server has them
start = time.perf_counter()
main(["recommend", "--points", "1:9.82,2:20.36,3:32.71,4:46.15,8:103.77,16:221.25", "--json"])
print(json.dumps({"plan_s": time.perf_counter() - start}))
"""


def _fresh_env(folder: Path) -> dict[str, str]:
    return {
        **os.environ,
        "NUMBA_CACHE_DIR": str(folder / "compiled"),
        "PLANNER_DB": str(folder / "planner.duckdb"),
    }


FIRST_ANSWER_TARGET_S = 3.0
"""From the first request to the seat count, on a fresh machine after the README's first
command (which compiles the simulator before the server starts)."""


def _compile(env: dict[str, str]) -> float:
    """``planner compile`` in a process of its own, as the README's first command runs it."""
    start = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "planner", "compile"],
        env=env,
        capture_output=True,
        text=True,
        timeout=_COMPILE_TIMEOUT_S,
        check=True,
    )
    return time.perf_counter() - start


def _timed_cli(env: dict[str, str], code: str = _CLI_PLAN) -> tuple[float, dict[str, float]]:
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", code],
        env=env,
        capture_output=True,
        text=True,
        timeout=_COMPILE_TIMEOUT_S,  # the cold plan compiles too
        check=True,
    )
    wall = time.perf_counter() - start
    return wall, json.loads(done.stdout.strip().splitlines()[-1])


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def _dashboard(env: dict[str, str], log: Path, delay_s: float) -> Figures:
    """Start the dashboard, open the Plan page ``delay_s`` after it answers, and time the
    headline for that visitor and for a second one."""
    from playwright.sync_api import sync_playwright

    port = _free_port()
    base = f"http://127.0.0.1:{port}"
    command = [
        sys.executable, "-m", "streamlit", "run", "app.py", "--server.headless=true",
        "--server.address=127.0.0.1", f"--server.port={port}",
        "--browser.gatherUsageStats=false", "--server.fileWatcherType=none",
    ]  # fmt: skip
    started = time.perf_counter()
    with log.open("wb") as out:
        server = subprocess.Popen(command, cwd=CHECKOUT, env=env, stdout=out, stderr=out)
    try:
        while True:
            if server.poll() is not None or time.perf_counter() - started > _TIMEOUT_S:
                raise RuntimeError(f"the dashboard did not start:\n{log.read_text()[-2000:]}")
            try:
                with urllib.request.urlopen(f"{base}/_stcore/health", timeout=1) as answer:
                    if answer.status == 200:
                        break
            except OSError:
                time.sleep(0.05)
        ready = time.perf_counter() - started
        time.sleep(delay_s)
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(
                executable_path=str(CHROMIUM), headless=True, args=list(CHROMIUM_ARGS)
            )
            try:
                timings = []
                for _visitor in range(2):
                    page = browser.new_context().new_page()
                    asked = time.perf_counter()
                    page.goto(f"{base}/", timeout=_COMPILE_TIMEOUT_S * 1000)
                    page.locator(HEADLINE).first.wait_for(timeout=_COMPILE_TIMEOUT_S * 1000)
                    timings.append(time.perf_counter() - asked)
                    headline = page.locator(HEADLINE).first.inner_text()
                    page.context.close()
            finally:
                browser.close()
    finally:
        server.terminate()
        try:
            server.wait(timeout=15)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
    return {
        "ready_s": ready,
        "first_headline_s": timings[0],
        "next_visitor_s": timings[1],
        "headline": headline,
    }


def _dashboard_missing() -> str | None:
    """Why the dashboard cannot be measured here, or None when it can."""
    if not (CHECKOUT / "app.py").is_file():
        return "needs a checkout of the repository (app.py)"
    if not CHROMIUM.exists():
        return f"needs Chromium at {CHROMIUM}"
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "needs Playwright (the dev extra)"
    return None


@section("first_answer")
def bench_first_answer(progress: Callable[[str], None]) -> Figures:
    """The first plan on a machine with empty caches: command line and dashboard."""
    figures: dict[str, Any] = {}
    folder = Path(tempfile.mkdtemp(prefix="planner-first-answer-"))
    try:
        progress("bench: first_answer: planner recommend with an empty compiled-code cache ...")
        env = _fresh_env(folder / "cli")
        (folder / "cli").mkdir()
        wall, parts = _timed_cli(env)
        figures["cli_cold_s"] = wall
        figures["cli_cold_import_s"] = parts["import_s"]
        figures["cli_cold_plan_s"] = parts["plan_s"]
        progress("bench: first_answer: the same command again, compiled code cached ...")
        figures["cli_warm_s"], _ = _timed_cli(env)

        progress("bench: first_answer: planner compile into an empty cache, then the plan ...")
        ahead = folder / "ahead"
        ahead.mkdir()
        env = _fresh_env(ahead)
        figures["compile_s"] = _compile(env)
        process_s, parts = _timed_cli(env, _FIRST_PLAN)
        figures["first_answer_s"] = parts["plan_s"]
        figures["first_answer_target_s"] = FIRST_ANSWER_TARGET_S
        figures["first_answer_within_target"] = parts["plan_s"] <= FIRST_ANSWER_TARGET_S
        figures["first_answer_process_s"] = process_s

        missing = _dashboard_missing()
        if missing is not None:
            figures["dashboard"] = f"not measured: {missing}"
        else:
            progress(
                "bench: first_answer: dashboard started after planner compile, first visitor "
                "the moment it answers ..."
            )
            run = folder / "dashboard-compiled"
            run.mkdir()
            env = _fresh_env(run)
            figures["dashboard_compile_s"] = _compile(env)
            seen = _dashboard(env, run / "streamlit.log", 0.0)
            figures["dashboard_after_compile_first_headline_s"] = seen["first_headline_s"]
            figures["dashboard_after_compile_within_target"] = (
                seen["first_headline_s"] <= FIRST_ANSWER_TARGET_S
            )
            figures["dashboard_after_compile_next_visitor_s"] = seen["next_visitor_s"]
            for delay in (0.0, 3.0):
                progress(
                    f"bench: first_answer: dashboard with an empty cache, first visitor "
                    f"{delay:g} s after it answers ..."
                )
                run = folder / f"dashboard-{delay:g}"
                run.mkdir()
                seen = _dashboard(_fresh_env(run), run / "streamlit.log", delay)
                if delay == 0:
                    figures["dashboard_ready_s"] = seen["ready_s"]
                    figures["dashboard_first_headline_s"] = seen["first_headline_s"]
                    figures["dashboard_next_visitor_s"] = seen["next_visitor_s"]
                    figures["dashboard_headline"] = seen["headline"]
                else:
                    figures["dashboard_first_headline_after_3s_s"] = seen["first_headline_s"]
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return figures
