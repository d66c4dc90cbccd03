"""Build the validation corpus of published multi-stream results
(``tests/data/published_multistream/cases.json``) from local clones of the MLPerf
Inference results repositories.

The legacy multi-stream scenario (a query of N samples every frame period, N the
published stream count, its 99th-percentile query latency within the period) appears in
the closed divisions of v0.7 and v1.0; v1.1 has no multi-stream results and from v2.0
the scenario reports an 8-sample query latency instead of a stream count. A case is one
system's one benchmark whose submission also publishes, for the same system, benchmark
and engine, a single-stream 90th-percentile latency and an offline throughput. Every
figure is kept with the repository, its commit and the file it was read from.

Usage: python scripts/published_multistream.py REPO_GIT_DIR [REPO_GIT_DIR ...] > cases.json
where each REPO_GIT_DIR is a clone (bare or not) of github.com/mlcommons/inference_results_vX.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys

RESULT = re.compile(
    r"^closed/([^/]+)/results/([^/]+)/([^/]+)/multistream/performance/run_1/"
    r"mlperf_log_summary\.txt$",
    re.IGNORECASE,
)


def git(repo: str, *args: str) -> str:
    return subprocess.run(
        ["git", "--git-dir", repo, *args], check=True, capture_output=True, text=True
    ).stdout


def number(text: str, pattern: str) -> float:
    found = re.search(pattern, text, re.MULTILINE)
    if found is None:
        raise ValueError(pattern)
    return float(found.group(1))


def summary(repo: str, commit: str, files: set[str], path: str) -> str | None:
    return git(repo, "show", f"{commit}:{path}") if path in files else None


def scenario_path(submitter: str, system: str, bench: str, scenario: str, files: set[str]) -> str:
    for spelling in (scenario, scenario.lower()):
        path = (
            f"closed/{submitter}/results/{system}/{bench}/{spelling}/performance/run_1/"
            "mlperf_log_summary.txt"
        )
        if path in files:
            return path
    return ""


def cases(repo: str) -> list[dict[str, object]]:
    commit = git(repo, "rev-parse", "HEAD").strip()
    files = set(git(repo, "ls-tree", "-r", "--name-only", commit).splitlines())
    name = next(
        f
        for f in (
            "inference_results_v0.7",
            "inference_results_v1.0",
            "inference_results_v1.1",
            "inference_results_v2.0",
        )
        if f in repo
    )
    out = []
    for path in sorted(files):
        m = RESULT.match(path)
        if m is None:
            continue
        submitter, system, bench = m.groups()
        multi = git(repo, "show", f"{commit}:{path}")
        if "Samples per query" not in multi:
            continue  # the newer scenario: no stream count
        single_path = scenario_path(submitter, system, bench, "SingleStream", files)
        offline_path = scenario_path(submitter, system, bench, "Offline", files)
        if not single_path or not offline_path:
            continue
        single = git(repo, "show", f"{commit}:{single_path}")
        offline = git(repo, "show", f"{commit}:{offline_path}")
        if not all("Result is : VALID" in t for t in (multi, single, offline)):
            continue
        system_path = f"closed/{submitter}/systems/{system}.json"
        described = (
            json.loads(git(repo, "show", f"{commit}:{system_path}")) if system_path in files else {}
        )
        out.append(
            {
                "repository": f"mlcommons/{name}",
                "version": name.rsplit("_v", 1)[1],
                "commit": commit,
                "submitter": submitter,
                "system": system,
                "benchmark": bench,
                "accelerator": described.get("accelerator_model_name", ""),
                "accelerators_per_node": described.get("accelerators_per_node"),
                "system_file": system_path if described else "",
                "streams": int(number(multi, r"^Samples per query\s*:\s*(\d+)")),
                "target_ms": number(multi, r'"target_ns"\s*:\s*(\d+)') / 1e6,
                "multistream_file": path,
                "single_stream_p90_ms": number(
                    single, r"^90th percentile latency \(ns\)\s*:\s*(\d+)"
                )
                / 1e6,
                "single_stream_file": single_path,
                "offline_samples_per_s": number(offline, r"^Samples per second\s*:\s*([\d.]+)"),
                "offline_file": offline_path,
            }
        )
    return out


if __name__ == "__main__":
    every = [case for repo in sys.argv[1:] for case in cases(repo)]
    json.dump({"cases": every}, sys.stdout, indent=1)
    sys.stdout.write("\n")
