"""Start-up time of every package: ``import <pkg>`` and ``python -m <pkg> --help`` against ``python -c pass``.

    python tools/startup.py [PKG ...] [--repeats 3] [--out out/startup.json]

Each command runs ``--repeats`` times in a fresh interpreter (this one, so the environment's installs
count); the median wall time is reported with its ratio to the interpreter's own start (``python -c
pass``, measured in the same run). Writes JSON (machine, versions, per package: seconds and ratios) and
prints a markdown table, slowest first. The start-up budget is 1 s for ``--help`` on an idle machine;
tools/tests/test_startup.py holds every package to a relative bound instead, so that load on a shared
machine does not decide the verdict.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
from checks import workspace  # noqa: E402

BUDGET_S = 1.0


def wall(cmd: list[str], repeats: int) -> float:
    """Median wall seconds of ``cmd`` over ``repeats`` runs (a failing command raises with its output)."""
    times = []
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    for _ in range(repeats):
        start = time.perf_counter()
        done = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, env=env)
        times.append(time.perf_counter() - start)
        if done.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd)} exited {done.returncode}:\n{done.stderr[-2000:]}")
    return statistics.median(times)


def measure(modules: list[str], repeats: int = 3, python: str = sys.executable, *, imports: bool = True) -> dict:
    """Seconds and ratios to ``python -c pass`` of ``import <module>`` and ``python -m <module> --help``.

    ``imports=False`` times ``--help`` only (it imports the package first, so it bounds the import too).
    """
    baseline = wall([python, "-c", "pass"], repeats)
    rows: dict[str, dict[str, Any]] = {}
    for module in modules:
        try:
            helped = wall([python, "-m", module, "--help"], repeats)
            imported = wall([python, "-c", f"import {module}"], repeats) if imports else float("nan")
        except RuntimeError as error:  # a package that cannot start is reported, the others still measured
            rows[module] = {"error": str(error).splitlines()[-1][:300]}
            continue
        rows[module] = {"import_s": imported, "help_s": helped, "import_ratio": imported / baseline,
                        "help_ratio": helped / baseline, "over_budget": helped > BUDGET_S}
    return {"baseline_s": baseline, "repeats": repeats, "budget_s": BUDGET_S, "python": platform.python_version(),
            "machine": platform.machine(), "cpu_count": os.cpu_count(),
            "measured": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "packages": rows}


def table(result: dict) -> str:
    lines = [f"`python -c pass`: {result['baseline_s']:.3f} s (median of {result['repeats']}); "
             f"Python {result['python']}, {result['cpu_count']} cores, {result['measured']}", "",
             "| package | import (s) | x pass | --help (s) | x pass | --help over 1 s |", "|---|---|---|---|---|---|"]
    for module, row in sorted(result["packages"].items(), key=lambda kv: -kv[1].get("help_s", float("inf"))):
        if "error" in row:
            lines.append(f"| {module} | fails | | fails | | {row['error']} |")
            continue
        lines.append(f"| {module} | {row['import_s']:.2f} | {row['import_ratio']:.0f} | {row['help_s']:.2f} | "
                     f"{row['help_ratio']:.0f} | {'yes' if row['over_budget'] else 'no'} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("packages", nargs="*", help="import names or distributions (default: all)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", type=Path, default=ROOT / "out" / "startup.json")
    args = parser.parse_args(argv)
    members = workspace(ROOT)[1:]
    wanted = set(args.packages)
    modules = [m.module for m in members if not wanted or wanted & {m.module, m.dist}]
    result = measure(modules, args.repeats)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(table(result))
    print(f"\nwrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
