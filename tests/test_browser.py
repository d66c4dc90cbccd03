"""A real browser against a real server: the journeys AppTest cannot see.

Starts ``streamlit run app.py`` on a free port of 127.0.0.1 with a store file of its own,
drives Debian's Chromium (``/usr/bin/chromium``) through Playwright, and writes a
screenshot of each page visited to ``artifacts/browser/`` (ignored by git) to look at.
The server and the browser are stopped at the end, whether the journey passed or not.
The Plan journey prints how long a rerun took after a control change (``-s`` shows it);
nothing asserts a time.

Chromium is installed by the test command (``bash scripts/test.sh``); without it these
tests fail with the command that installs it. They are never skipped.
"""

from __future__ import annotations

import contextlib
import os
import re
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from playwright.sync_api import Browser, BrowserContext, Page, Route, expect, sync_playwright

from dashboard.navigation import PAGES

pytestmark = pytest.mark.browser

REPO = Path(__file__).resolve().parent.parent
ARTIFACTS = REPO / "artifacts" / "browser"
CHROMIUM = Path("/usr/bin/chromium")
INSTALL = (
    "apt-get update && apt-get install -y --no-install-recommends "
    "chromium chromium-headless-shell fonts-liberation"
)
# Headless in a sandboxed container, and never reaching outside hosts.
LOCAL_HOSTS = ("127.0.0.1", "localhost", "::1", "[::1]")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-quic",
    "--no-first-run",
]
WIDTH = 1400
STARTUP_S = 60
UI_TIMEOUT_MS = 30_000
# The first page of a fresh checkout compiles the simulator (Numba) in the server.
FIRST_RUN_MS = 180_000
HEADLINE = re.compile(r"^(\d+(–\d+)? seats? per card — .+|No seat fits these criteria)$")

NEW_CURVE_CSV = (
    "batch,latency_ms,p10_ms,p90_ms,model,card,precision,resolution\n"
    "1,6.1,5.9,6.4,ball-detector,l4,fp16,512x288\n"
    "2,10.4,10.1,10.9,ball-detector,l4,fp16,512x288\n"
    "4,19.0,18.5,19.8,ball-detector,l4,fp16,512x288\n"
    "8,37.2,36.1,38.8,ball-detector,l4,fp16,512x288\n"
)
BAD_CSV = "batch,latency_ms,model,card\n1,6.1,m,l4\ntwo,10.4,m,l4\n4,-1,m,l4\n"
PERF_CSV = (
    "Concurrency,Inferences/Second,Client Send,Network+Server Send/Recv,Server Queue,"
    "Server Compute Input,Server Compute Infer,Server Compute Output,Client Recv,"
    "p50 latency,p90 latency,p95 latency,p99 latency\n"
    "1,500.0,10,100,20,5,1860,5,0,2000,2100,2105,2200\n"
)
KEY_COLUMNS = ("option", "seats per card", "GPUs for peak", "cost per seat-hour")
"""The columns of the Plan and Compare tables a reader compares: in view on any screen."""


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def _wait_until_healthy(base: str, process: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + STARTUP_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail(
                f"streamlit exited with status {process.returncode}:\n{log.read_text()[-3000:]}",
                pytrace=False,
            )
        try:
            with urllib.request.urlopen(f"{base}/_stcore/health", timeout=1) as answer:
                if answer.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.2)
    pytest.fail(
        f"streamlit did not answer /_stcore/health within {STARTUP_S} s:\n"
        f"{log.read_text()[-3000:]}",
        pytrace=False,
    )


@contextlib.contextmanager
def streamlit_server(folder: Path, **env: str) -> Iterator[str]:
    """``streamlit run app.py`` on a free local port with its log in ``folder`` and
    ``env`` added to the environment (``PLANNER_DB`` at least); its base URL."""
    port = _free_port()
    log_path = folder / "streamlit.log"
    command = [sys.executable, "-m", "streamlit", "run", "app.py", "--server.headless=true",
               "--server.address=127.0.0.1", f"--server.port={port}",
               "--browser.gatherUsageStats=false", "--server.fileWatcherType=none"]  # fmt: skip
    with log_path.open("wb") as log:
        process = subprocess.Popen(command, cwd=REPO, env={**os.environ, **env}, stdout=log,
                                   stderr=subprocess.STDOUT)  # fmt: skip
        try:
            base = f"http://127.0.0.1:{port}"
            _wait_until_healthy(base, process, log_path)
            yield base
        finally:
            process.terminate()
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The dashboard with a fresh store; its base URL."""
    folder = tmp_path_factory.mktemp("server")
    with streamlit_server(folder, PLANNER_DB=str(folder / "planner.duckdb")) as base:
        yield base


@pytest.fixture(scope="module")
def chromium() -> Iterator[Browser]:
    """Debian's Chromium, headless, driven by Playwright (never a downloaded browser)."""
    if not CHROMIUM.exists():
        pytest.fail(
            f"Chromium is not installed at {CHROMIUM}; the browser journey needs it. "
            f"`bash scripts/test.sh` installs it, or run: {INSTALL}",
            pytrace=False,
        )
    playwright = sync_playwright().start()
    try:
        browser = playwright.chromium.launch(
            executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS
        )
        try:
            yield browser
        finally:
            browser.close()
    finally:
        playwright.stop()


def stay_on_this_machine(context: BrowserContext) -> list[str]:
    """Block every request that would leave this machine; the list of them fills as the
    pages try (a dashboard must work offline: no fonts, icons or scripts from outside)."""
    outside: list[str] = []

    def handle(route: Route) -> None:
        host = urlsplit(route.request.url).hostname or ""
        if route.request.url.startswith(("data:", "blob:")) or host in LOCAL_HOSTS:
            route.continue_()
        else:
            outside.append(route.request.url)
            route.abort()

    context.route("**/*", handle)
    return outside


@pytest.fixture
def page(chromium: Browser) -> Iterator[Page]:
    """A page in a fresh browser context (no cookies or storage from other tests), which
    fails the test if it asks for anything from outside this machine."""
    context = chromium.new_context(viewport={"width": WIDTH, "height": 1000})
    context.set_default_timeout(UI_TIMEOUT_MS)
    expect.set_options(timeout=UI_TIMEOUT_MS)
    outside = stay_on_this_machine(context)
    try:
        yield context.new_page()
    finally:
        context.close()
    assert outside == [], f"the dashboard asked for addresses outside this machine: {outside}"


def settle(page: Page) -> None:
    """Wait until the script run triggered by the last action has finished."""
    page.wait_for_timeout(300)  # the run starts a moment after the click
    expect(page.get_by_test_id("stStatusWidget")).to_have_count(0)


def screenshot(page: Page, name: str) -> Path:
    """The whole page as ``artifacts/browser/NAME.png`` (the viewport grown to fit)."""
    settle(page)
    # Tables and charts load their code on first use and show placeholders until then.
    expect(page.locator("[data-testid^='stSkeleton']")).to_have_count(0)
    charts = page.get_by_test_id("stPlotlyChart")
    for index in range(charts.count()):
        expect(charts.nth(index).locator(".main-svg").first).to_be_attached()
    height = page.evaluate(
        "() => document.querySelector('[data-testid=\"stMainBlockContainer\"]').scrollHeight"
    )
    page.set_viewport_size({"width": WIDTH, "height": int(height) + 150})
    page.wait_for_timeout(800)  # charts re-layout to the new size
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    page.set_viewport_size({"width": WIDTH, "height": 1000})
    return path


def page_url(server: str, script: str) -> str:
    """Where a page is served: the landing page at ``/``, the others at their path."""
    entry = next(e for e in PAGES if e.script == script)
    return f"{server}/" if entry is PAGES[0] else f"{server}/{entry.url_path}"


def test_curves_page_upload_journey(server: str, page: Page, tmp_path: Path) -> None:
    page.goto(page_url(server, "curves.py"))
    expect(page.get_by_role("heading", name="Batch curves")).to_be_visible()
    expect(page.get_by_text("5 of 5 stored curves")).to_be_visible()
    expect(page.get_by_text("latency per call (ms)").first).to_be_visible()
    screenshot(page, "curves")

    # A bad file: every problem listed, nothing stored.
    page.get_by_role("tab", name="Upload").click()
    bad = tmp_path / "bad.csv"
    bad.write_text(BAD_CSV)
    page.locator("input[type=file]").set_input_files(bad)
    expect(page.get_by_text("nothing was stored", exact=False)).to_be_visible()
    expect(page.get_by_text("bad.csv line 3", exact=False)).to_be_visible()
    expect(page.get_by_text("bad.csv line 4", exact=False)).to_be_visible()
    screenshot(page, "upload-problems")
    page.get_by_role("button", name="Remove bad.csv").click()
    settle(page)

    # Five files at once: every file's problems in one report, in the form's words.
    five = []
    files = {
        "good.csv": NEW_CURVE_CSV,
        "rows.csv": BAD_CSV,
        "notes.txt": "my notes about the run\n",
        "b1.csv": PERF_CSV,
        "also.csv": "batch,latency_ms,model,card\n16,70,ball-detector,l4\n",
    }
    for name, text in files.items():
        path = tmp_path / name
        path.write_text(text)
        five.append(path)
    page.locator("input[type=file]").set_input_files(five)
    report = page.get_by_test_id("stAlertContentError")
    expect(report).to_contain_text("in 3 of 5 files; nothing was stored")
    for fragment in ("rows.csv line 3", "rows.csv line 4", "not a format the planner reads",
                     "b1.csv: a perf_analyzer CSV does not name the model; fill in “Model”",
                     "fill in “Batch size of this run” with the run's -b"):  # fmt: skip
        expect(report).to_contain_text(fragment)
    expect(report).not_to_contain_text("--")
    expect(page.get_by_label("Model *")).to_be_visible()  # the field the perf file needs
    screenshot(page, "upload-five-files")
    for path in five:
        page.get_by_role("button", name=f"Remove {path.name}").click()
        settle(page)

    # A good file: preview first, stored only on Save, then shown in the list.
    good = tmp_path / "l4.csv"
    good.write_text(NEW_CURVE_CSV)
    page.locator("input[type=file]").set_input_files(good)
    expect(page.get_by_text("Every row is valid")).to_be_visible()
    expect(page.get_by_text("1 curve(s) read from 1 file(s)")).to_be_visible()
    screenshot(page, "upload-preview")
    page.get_by_role("button", name="Save 1 new curve(s)").click()
    expect(page.get_by_text("Saved 1 curve(s)", exact=False)).to_be_visible()
    expect(page.get_by_text("6 of 6 stored curves")).to_be_visible()
    label = "ball-detector on l4, 512x288 FP16"
    expect(page.get_by_role("heading", name=label)).to_be_visible()
    page.get_by_test_id("stSelectbox").filter(has_text="Curve to show").click()
    expect(page.get_by_role("option", name=label, exact=False)).to_be_visible()
    page.keyboard.press("Escape")
    assert "curve=" in page.url
    screenshot(page, "curves-after-upload")


def test_a_link_to_an_unknown_curve_opens_with_a_message(server: str, page: Page) -> None:
    page.goto(page_url(server, "curves.py") + "?curve=<script>alert(1)</script>")
    expect(page.get_by_text("No stored curve has the id", exact=False)).to_be_visible()
    expect(page.get_by_text("<script>alert(1)</script>", exact=False)).to_be_visible()
    expect(page.get_by_role("heading", name="Batch curves")).to_be_visible()
    screenshot(page, "curves-unknown-link")


def rerun_ms(page: Page, before: str) -> float:
    """Milliseconds until the headline differs from ``before`` and the run has finished,
    polled on every animation frame (``expect`` polls too coarsely to time with)."""
    started = time.perf_counter()
    page.wait_for_function(
        """before => {
            const title = document.querySelector('.st-key-headline h1');
            const running = document.querySelector('[data-testid="stStatusWidget"]');
            return title && title.innerText.trim() !== before && !running;
        }""",
        arg=before,
        polling="raf",
    )
    return (time.perf_counter() - started) * 1000


def headline(page: Page) -> str:
    """The Plan page's headline ("3 seats per card — oldest-first, exclusive")."""
    title = page.locator(".st-key-headline h1")
    expect(title).to_have_text(HEADLINE)
    return title.inner_text().strip()


def test_plan_journey_headline_budget_link_and_tamper(server: str, chromium: Browser) -> None:
    context = chromium.new_context(viewport={"width": WIDTH, "height": 1000})
    context.set_default_timeout(UI_TIMEOUT_MS)
    try:
        page = context.new_page()
        page.goto(f"{server}/")
        expect(page.locator(".st-key-headline h1")).to_have_text(HEADLINE, timeout=FIRST_RUN_MS)
        first = headline(page)
        settle(page)
        screenshot(page, "plan")

        # Change the budget: the URL and the headline follow.
        budget = page.get_by_role("spinbutton", name="Latency budget (ms)")
        budget.fill("15")
        budget.press("Enter")
        fresh_ms = rerun_ms(page, first)
        expect(page).to_have_url(re.compile(r"budget_ms=15(&|$)"))
        changed = headline(page)
        assert changed != first

        # Back to a value seen before (answered from the cache), and forward again.
        budget.fill("50")
        budget.press("Enter")
        cached_ms = rerun_ms(page, changed)
        assert headline(page) == first
        budget.fill("15")
        budget.press("Enter")
        rerun_ms(page, first)
        assert headline(page) == changed
        print(
            f"\nPlan rerun after a budget change, press to screen: {fresh_ms:.0f} ms simulating, "
            f"{cached_ms:.0f} ms from the cache"
        )
        settle(page)

        link = page.locator(".st-key-plan_self_contained code").inner_text()
        link = "".join(link.split())  # the code block wraps long lines
        assert link.startswith(f"{server}/?points=") and "budget_ms=15" in link
        screenshot(page, "plan-budget-15")
    finally:
        context.close()

    # The self-contained link in a fresh browser context: the same plan, the same answer.
    fresh = chromium.new_context(viewport={"width": WIDTH, "height": 1000})
    fresh.set_default_timeout(UI_TIMEOUT_MS)
    try:
        page = fresh.new_page()
        page.goto(link)
        assert headline(page) == changed
        expect(page.get_by_text("Parts of this link were ignored")).to_have_count(0)
        expect(page.get_by_role("spinbutton", name="Latency budget (ms)")).to_have_value("15")
        screenshot(page, "plan-from-link")

        # A tampered link: one clear message, the default plan, no stack trace.
        page.goto(f"{server}/?budget_ms=abc&curve=<script>alert(1)</script>&policies=fastest")
        expect(page.get_by_text("Parts of this link were ignored")).to_be_visible()
        expect(page.get_by_text("ignored budget_ms='abc'", exact=False)).to_be_visible()
        assert headline(page) == first
        expect(page.get_by_test_id("stException")).to_have_count(0)
        screenshot(page, "plan-tampered-link")
    finally:
        fresh.close()


def test_simulate_measure_and_compare_pages(server: str, page: Page) -> None:
    link = "?sessions=6&policy=oldest-first&compare_policy=batch-all&duration_s=10"
    page.goto(page_url(server, "simulate.py") + link)
    expect(page.get_by_role("heading", name="Simulate one scenario")).to_be_visible()
    expect(page.get_by_text("time since the start (ms)").first).to_be_visible()
    expect(page.get_by_test_id("stException")).to_have_count(0)
    screenshot(page, "simulate")

    page.goto(page_url(server, "measure.py"))
    expect(page.get_by_role("heading", name="Measure a batch curve")).to_be_visible()
    expect(page).to_have_title("Measure — GPU Seat Planner")
    # Before any button: what a measurement here would run on (no GPU on a test machine).
    expect(
        page.get_by_text(re.compile("No CUDA GPU here|Measures on this machine's CUDA device"))
    ).to_be_visible()
    screenshot(page, "measure-here")
    page.get_by_role("tab", name="Command for the card's machine").click()
    expect(page.get_by_text("planner measure", exact=False).first).to_be_visible()
    screenshot(page, "measure")

    page.goto(page_url(server, "compare.py"))
    expect(page.get_by_role("heading", name="Compare cards: ball-detector")).to_be_visible(
        timeout=FIRST_RUN_MS
    )
    expect(page.get_by_text("Seats per card").first).to_be_visible()
    expect(page.get_by_test_id("stException")).to_have_count(0)
    screenshot(page, "compare")


def test_the_simulate_link_shows_the_headlines_frame_rate(server: str, page: Page) -> None:
    page.goto(f"{server}/?seeds=2&duration_s=5")
    expect(page.locator(".st-key-headline h1")).to_have_text(HEADLINE, timeout=FIRST_RUN_MS)
    expect(page).to_have_title("Plan — GPU Seat Planner")
    why = page.locator(".st-key-headline p").filter(has_text="Why not").first.inner_text()
    claimed = re.search(r"gets (\d+(?:\.\d)?) fps", why)
    assert claimed, why
    page.get_by_role("link", name=re.compile(r"^See \d+ sessions under .+ in detail$")).click()
    expect(page.get_by_role("heading", name="Simulate one scenario")).to_be_visible()
    expect(page).to_have_title("Simulate — GPU Seat Planner")
    slowest = page.get_by_test_id("stMetric").filter(has_text="Slowest session").first
    expect(slowest).to_contain_text(f"{claimed[1]} fps")
    expect(slowest).to_contain_text("below the floor")
    screenshot(page, "simulate-from-plan")


def key_columns_in_view(page: Page, table_key: str, width: int) -> None:
    """The key columns' headers and first cells lie inside the viewport, with no
    sideways scrolling of the page or of the table."""
    table = page.locator(f".st-key-{table_key} table")
    expect(table).to_be_visible()
    headers = [h.strip() for h in table.locator("thead th").all_inner_texts()]
    first_row = table.locator("tbody tr").first.locator("td, th")
    for name in KEY_COLUMNS:
        if name not in headers:
            continue
        index = headers.index(name)
        for cell in (table.locator("thead th").nth(index), first_row.nth(index)):
            box = cell.bounding_box()
            assert box is not None, name
            assert box["x"] >= 0 and box["x"] + box["width"] <= width, (name, box, width)
    scrolled = page.evaluate(
        """key => {
            const table = document.querySelector(`.st-key-${key} table`);
            let node = table, left = 0;
            while (node) { left += node.scrollLeft || 0; node = node.parentElement; }
            return {left, page: document.documentElement.scrollWidth};
        }""",
        table_key,
    )
    assert scrolled["left"] == 0 and scrolled["page"] <= width, scrolled


def toolbars_clear_of_titles(page: Page) -> int:
    """Every drawn chart's toolbar (shown on hover) lies clear of its title; how many
    charts had both."""
    page.locator(".js-plotly-plot .gtitle").first.wait_for()
    overlaps = page.evaluate(
        """() => {
            const out = [];
            let checked = 0;
            for (const plot of document.querySelectorAll('.js-plotly-plot')) {
                const bar = plot.querySelector('.modebar');
                const title = plot.querySelector('.gtitle');
                if (!bar || !title) continue;
                checked += 1;
                const a = bar.getBoundingClientRect(), b = title.getBoundingClientRect();
                const apart = a.right <= b.left || b.right <= a.left
                    || a.bottom <= b.top || b.bottom <= a.top;
                if (!apart) out.push(title.textContent);
            }
            return {checked, out};
        }"""
    )
    assert not overlaps["out"], overlaps
    return int(overlaps["checked"])


@pytest.mark.parametrize(("width", "height"), [(1400, 1000), (400, 900)])
def test_key_columns_of_plan_and_compare_fit_the_screen(
    server: str, chromium: Browser, width: int, height: int
) -> None:
    context = chromium.new_context(viewport={"width": width, "height": height})
    context.set_default_timeout(UI_TIMEOUT_MS)
    try:
        page = context.new_page()
        page.goto(f"{server}/?peak_sessions=100&price_per_hour=2.5&seeds=2&duration_s=5")
        expect(page.locator(".st-key-headline h1")).to_have_text(HEADLINE, timeout=FIRST_RUN_MS)
        settle(page)
        page.locator(".st-key-plan_options").scroll_into_view_if_needed()
        key_columns_in_view(page, "plan_options", width)
        page.screenshot(path=str(_artifact(f"plan-table-{width}")))
        assert toolbars_clear_of_titles(page) >= 1

        page.goto(f"{server}/compare?peak_sessions=100&seeds=2&duration_s=5")
        expect(page.get_by_role("heading", name="Compare cards: ball-detector")).to_be_visible(
            timeout=FIRST_RUN_MS
        )
        settle(page)
        page.locator(".st-key-cmp_table").scroll_into_view_if_needed()
        key_columns_in_view(page, "cmp_table", width)
        page.screenshot(path=str(_artifact(f"compare-table-{width}")))
        assert toolbars_clear_of_titles(page) >= 1
    finally:
        context.close()


def _artifact(name: str) -> Path:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    return ARTIFACTS / f"{name}.png"


A100_RESNET50 = "1:0.76,2:0.81,4:0.93,8:1.14,16:1.54,32:2.45,64:4.27,128:7.81,256:14.74"
"""ResNet-50, TensorRT FP16 on an A100 80 GB (NVIDIA's DeepLearningExamples tables)."""


def test_a_big_card_gets_a_seat_count_within_the_default_budget(server: str, page: Page) -> None:
    # Hundreds of seats: the bracketed search answers under the page's default budget, and
    # the charts sample the session axis and say so.
    page.goto(f"{server}/?points={A100_RESNET50}&card=a100-80gb")
    title = page.locator(".st-key-headline h1")
    expect(title).to_have_text(HEADLINE, timeout=FIRST_RUN_MS)
    seats = int(re.match(r"\d+", title.inner_text().strip()).group())  # type: ignore[union-attr]
    assert seats >= 100
    expect(page.get_by_text("over budget", exact=False)).to_have_count(0)
    expect(page.get_by_text("left out", exact=False)).to_have_count(0, timeout=FIRST_RUN_MS)
    expect(page.get_by_text("The session axis is sampled", exact=False).first).to_be_visible(
        timeout=FIRST_RUN_MS
    )
    screenshot(page, "plan-big-card")
