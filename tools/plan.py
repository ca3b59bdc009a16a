"""Map changed paths to the packages whose tests must run (CI's plan job).

    python tools/plan.py --base origin/main          # prints packages=["fastpd", ...] (to test) and
                                                     # members=["icml25-shared", ...] (every member, for the
                                                     # lowest job) for $GITHUB_OUTPUT
    python tools/plan.py --paths packages/dsi/src/dsi/x.py README.md

A change under shared/, tools/, .github/, .ci/, hatch.toml, pyproject.toml or tests/integration/ means every
package; a change under packages/<dist>/ means that package, except for its markdown (README, CHANGELOG,
DATA.md, ...; not under src/ or tests/, where a .md file may be package data), studies/ and results/, which
its tests do not read (lint still runs on every change); anything else (docs) means none.
"""

from __future__ import annotations

import argparse
import json
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EVERYTHING = ("shared/", "tools/", ".github/", "hatch.toml", "pyproject.toml", "tests/integration/", ".ci/")


def all_packages(root: Path = ROOT) -> list[str]:
    return sorted(p.name for p in (root / "packages").iterdir() if (p / "pyproject.toml").exists())


DOCUMENTATION = ("studies", "results")  # folders of packages/<dist>/ that no test reads


def normalise_path(path: str) -> str:
    """``path`` relative to the repository root, without leading ``./`` (``./.github/x`` -> ``.github/x``)."""
    path = path.strip().replace("\\", "/")
    while path.startswith("./"):
        path = path[2:].lstrip("/")
    return path


def runs_tests(parts: list[str]) -> bool:
    """Whether a changed file packages/<dist>/<parts...> can change what the package's tests see."""
    if not parts or parts[0] in DOCUMENTATION:
        return False
    return not (parts[-1].lower().endswith(".md") and parts[0] not in ("src", "tests"))


def affected(paths: list[str], packages: list[str]) -> list[str]:
    """Packages whose tests a change to ``paths`` must run, in sorted order."""
    hit: set[str] = set()
    for path in map(normalise_path, paths):
        if not path:
            continue
        if any(path == p or path.startswith(p) for p in EVERYTHING):
            return sorted(packages)
        parts = path.split("/")
        if len(parts) > 1 and parts[0] == "packages" and parts[1] in packages and runs_tests(parts[2:]):
            hit.add(parts[1])
    return sorted(hit)


def changed_paths(base: str) -> list[str]:
    done = subprocess.run(["git", "diff", "--name-only", f"{base}...HEAD"], cwd=ROOT, capture_output=True, text=True)
    if done.returncode != 0:  # unknown base (new branch, force push): test everything
        return ["shared/"]
    return done.stdout.splitlines()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--base", help="git revision to diff against")
    source.add_argument("--paths", nargs="*", help="changed paths, given directly")
    args = parser.parse_args(argv)
    paths = args.paths if args.paths is not None else changed_paths(args.base)
    print(f"packages={json.dumps(affected(paths, all_packages()))}")
    print(f"members={json.dumps(['icml25-shared', *all_packages()])}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
