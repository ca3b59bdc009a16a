"""Map changed paths to the packages whose tests must run (CI's plan job).

    python tools/plan.py --base origin/main          # prints packages=["fastpd", ...] for $GITHUB_OUTPUT
    python tools/plan.py --paths packages/dsi/src/dsi/x.py README.md

A change under shared/, tools/, .github/, hatch.toml, pyproject.toml or tests/integration/ means every
package; a change under packages/<dist>/ means that package; anything else (docs) means none.
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


def affected(paths: list[str], packages: list[str]) -> list[str]:
    """Packages whose tests a change to ``paths`` must run, in sorted order."""
    hit: set[str] = set()
    for path in paths:
        path = path.strip().lstrip("./") if path.startswith("./") else path.strip()
        if not path:
            continue
        if any(path == p or path.startswith(p) for p in EVERYTHING):
            return sorted(packages)
        parts = path.split("/")
        if len(parts) > 1 and parts[0] == "packages" and parts[1] in packages:
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
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
