"""``docs/architecture.md`` tells the truth about the modules: its "Every module" section
names each module of ``planner/`` and ``dashboard/`` (a package's ``__init__.py`` by the
package's folder) and nothing that does not exist, and no module is over the line limit
unless its "Modules over 600 lines" subsection names it with a reason."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
MAP = ROOT / "docs" / "architecture.md"
PACKAGES = ("planner", "dashboard")
MAX_LINES = 600

MODULES_HEADING = "## Every module"
LONG_HEADING = "### Modules over 600 lines"
# A module named in the map: `planner/sim/arrivals.py`, or a package as `planner/sim/`.
NAMED = re.compile(r"`((?:planner|dashboard)/(?:[\w]+/)*(?:\w+\.py)?)`")
# An exception to the line limit: a list item `- `path.py`: the reason`.
EXCEPTION = re.compile(r"^- `((?:planner|dashboard)/[\w/]+\.py)`:[ \t]*(\S.*)$", re.MULTILINE)


def section(text: str, heading: str, ends: tuple[str, ...]) -> str:
    """The text under ``heading`` up to the next heading that starts with one of ``ends``."""
    start = text.index(heading + "\n") + len(heading) + 1
    stops = [m.start() for m in re.finditer(r"^#+ ", text[start:], re.MULTILINE)]
    stops = [s for s in stops if text[start + s :].startswith(ends)]
    return text[start : start + stops[0]] if stops else text[start:]


def named_modules(text: str) -> set[str]:
    """The modules the map names, as paths of files (a folder means its ``__init__.py``)."""
    body = section(text, MODULES_HEADING, ("## ", "### "))
    return {n + "__init__.py" if n.endswith("/") else n for n in NAMED.findall(body)}


def exceptions(text: str) -> dict[str, str]:
    """The modules allowed over the limit, with their reasons."""
    return dict(EXCEPTION.findall(section(text, LONG_HEADING, ("## ", "### "))))


def modules() -> set[str]:
    return {
        path.relative_to(ROOT).as_posix()
        for package in PACKAGES
        for path in (ROOT / package).rglob("*.py")
        if "__pycache__" not in path.parts
    }


def lines(module: str) -> int:
    return len((ROOT / module).read_text(encoding="utf-8").splitlines())


def test_the_map_names_every_module_and_only_modules_that_exist() -> None:
    named = named_modules(MAP.read_text(encoding="utf-8"))
    existing = modules()
    assert sorted(existing - named) == [], "modules the map does not name"
    assert sorted(named - existing) == [], "modules the map names that do not exist"


def test_no_module_is_over_the_limit_without_a_stated_reason() -> None:
    allowed = exceptions(MAP.read_text(encoding="utf-8"))
    over = {m: lines(m) for m in modules() if lines(m) > MAX_LINES}
    assert {m: n for m, n in over.items() if m not in allowed} == {}
    # An exception that no longer applies is a stale line in the map.
    assert sorted(m for m in allowed if m not in over) == []


SAMPLE = """# Architecture

## Every module

- `planner/`: the package.
- `planner/sim/arrivals.py`, `planner/sim/jit.py`: two modules.
- `dashboard/pages/plan.py`: a page (`planner.sim.work` and `docs/design.md` are no paths).

### Modules over 600 lines

- `planner/sim/engine_fast.py`: Numba caches compiled code per file.
- `planner/sim/jit.py`:

## The path of one plan

- `planner/plan/search.py` is named after the section ends.
"""


def test_the_map_is_read_from_its_section_only() -> None:
    assert named_modules(SAMPLE) == {
        "planner/__init__.py",
        "planner/sim/arrivals.py",
        "planner/sim/jit.py",
        "dashboard/pages/plan.py",
    }
    # An exception without a reason is none.
    assert exceptions(SAMPLE) == {
        "planner/sim/engine_fast.py": "Numba caches compiled code per file."
    }


@pytest.mark.parametrize("module", ["planner/sim/arrivals.py", "dashboard/__init__.py"])
def test_a_module_left_out_of_the_map_is_found(module: str) -> None:
    text = MAP.read_text(encoding="utf-8")
    named = module.removesuffix("__init__.py")
    assert f"`{named}`" in text
    shorter = named_modules(text.replace(f"`{named}`", "`planner/no_such_module.py`"))
    assert module in modules() - shorter
    assert "planner/no_such_module.py" in shorter - modules()
