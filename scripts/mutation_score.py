"""The mutation score per mutated module, from the results mutmut keeps in mutants/.

Run by scripts/mutation.sh after ``mutmut run``. A mutant is killed when a test failed
(or timed out) with it in place; the score is killed / checked, mutants not yet checked
left out and counted apart.
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path

KILLED = {1, 3, 36, 24, -24, 152, 255}  # a test failed, pytest errored, or it timed out
SURVIVED = {0}
NO_TESTS = {5, 33}  # no selected test reaches the mutated function


def verdict(code: int | None) -> str:
    if code is None:
        return "not checked"
    if code in KILLED:
        return "killed"
    if code in SURVIVED:
        return "survived"
    if code in NO_TESTS:
        return "no tests"
    return "other"


def main() -> int:
    metas = sorted(Path("mutants").rglob("*.py.meta"))
    if not metas:
        print("No mutation results in mutants/: run scripts/mutation.sh first.")
        return 1
    columns = ("killed", "survived", "no tests", "other", "not checked")
    print(f"{'module':<28}" + "".join(f"{c:>13}" for c in columns) + f"{'score':>9}")
    total: Counter[str] = Counter()
    for meta in metas:
        codes = json.loads(meta.read_text())["exit_code_by_key"].values()
        counts = Counter(verdict(c) for c in codes)
        total.update(counts)
        module = str(meta.relative_to("mutants")).removesuffix(".meta")
        print(f"{module:<28}" + "".join(f"{counts[c]:>13}" for c in columns) + score(counts))
    print(f"{'all':<28}" + "".join(f"{total[c]:>13}" for c in columns) + score(total))
    return 0


def score(counts: Counter[str]) -> str:
    checked = sum(n for verdict, n in counts.items() if verdict != "not checked")
    return f"{counts['killed'] / checked:>9.1%}" if checked else f"{'-':>9}"


if __name__ == "__main__":
    sys.exit(main())
