"""Shared fixtures: a fresh store file per test and an in-process command line.

Also what some tests need from outside the repository: tests marked ``torch`` are skipped,
with the reason, where PyTorch is not installed; tests that read the shared import samples
(``../shared/data/import-samples``) carry ``needs_samples`` and are skipped where that
folder is missing, instead of failing to collect.
"""

from __future__ import annotations

import importlib.util
import json
import signal
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from planner.cli import main
from planner.store.repository import Store

REPO = Path(__file__).resolve().parent.parent
SAMPLES = REPO.parent / "shared" / "data" / "import-samples"
SAMPLES_MISSING = (
    f"needs the shared import samples in {SAMPLES} (../shared/data next to the repository), "
    "which this checkout does not have"
)
needs_samples = pytest.mark.skipif(not SAMPLES.is_dir(), reason=SAMPLES_MISSING)

# A suite started in the background of a non-interactive shell (``bash scripts/test.sh &``)
# inherits Ctrl-C ignored, and every command it starts would too; the Ctrl-C tests send
# SIGINT to commands, which must receive it as a user's terminal delivers it.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

TORCH_MISSING = "needs PyTorch: pip install torch==2.13.0, then the project's measure extra"
HAVE_TORCH = importlib.util.find_spec("torch") is not None


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Skip the tests marked ``torch`` when PyTorch is not installed, saying why."""
    if HAVE_TORCH:
        return
    for item in items:
        if item.get_closest_marker("torch") is not None:
            item.add_marker(pytest.mark.skip(reason=TORCH_MISSING))


@pytest.fixture
def db_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A store file of this test's own; PLANNER_DB points at it."""
    path = tmp_path / "planner.duckdb"
    monkeypatch.setenv("PLANNER_DB", str(path))
    return path


@pytest.fixture
def store(db_path: Path) -> Iterator[Store]:
    with Store(db_path) as opened:
        yield opened


@dataclass
class Run:
    status: int
    out: str
    err: str

    @property
    def json(self) -> Any:
        return json.loads(self.out)


@pytest.fixture
def cli(db_path: Path, capsys: pytest.CaptureFixture[str]) -> Any:
    """Run ``planner ARGS`` in-process against this test's store."""

    def run(*args: str) -> Run:
        try:
            status = main([str(a) for a in args])
        except SystemExit as exc:  # argparse exits on its own errors
            status = int(exc.code or 0)
        captured = capsys.readouterr()
        return Run(status, captured.out, captured.err)

    return run


@pytest.fixture
def app(db_path: Path) -> Iterator[Any]:
    """The dashboard (``streamlit.testing.v1.AppTest``) on this test's own store; cached
    resources are cleared around it, which closes the store and releases the file."""
    import streamlit as st
    from streamlit.testing.v1 import AppTest

    st.cache_resource.clear()
    yield AppTest.from_file(str(REPO / "app.py"), default_timeout=120)
    st.cache_resource.clear()


def run(at: Any) -> Any:
    """Run the app and fail on any exception it raised."""
    at.run()
    assert not at.exception, at.exception
    return at


PYTRITON_MISSING = (
    "needs a real Triton: pip install --no-deps -r constraints/triton.txt (nvidia-pytriton "
    "0.7.0 and tritonclient)"
)


@pytest.fixture(scope="session")
def triton_server() -> Iterator[tuple[int, int]]:
    """A real Triton Inference Server (``tests/triton_server.py``) for the whole session:
    its (HTTP, gRPC) ports. Skipped, saying why, where PyTriton is not installed."""
    pytest.importorskip("pytriton", reason=PYTRITON_MISSING)
    pytest.importorskip("tritonclient.grpc.aio", reason=PYTRITON_MISSING)
    from tests.triton_server import serve

    with serve() as ports:
        yield ports


@pytest.fixture(scope="session")
def restricted_triton() -> Iterator[tuple[int, int, str]]:
    """The same Triton server with its statistics restricted, as PyTriton and hardened
    production servers keep them: its (HTTP, gRPC) ports and the access token that opens
    them. Skipped, saying why, where PyTriton is not installed."""
    import secrets

    pytest.importorskip("pytriton", reason=PYTRITON_MISSING)
    pytest.importorskip("tritonclient.grpc.aio", reason=PYTRITON_MISSING)
    from tests.triton_server import Settings, serve

    token = secrets.token_urlsafe(16)
    with serve(Settings(token=token)) as (http, grpc):
        yield http, grpc, token
