"""Create packages/<dist>/ with the monorepo's standard shape from tools/templates/package.

    python tools/new_package.py fastpd --summary "Exact partial dependence for tree ensembles"
    python tools/new_package.py quest-qat --module quest --summary "..."
"""

from __future__ import annotations

import argparse
import keyword
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TEMPLATE = ROOT / "tools" / "templates" / "package"
DIST_PATTERN = re.compile(r"^[a-z][a-z0-9]*(-[a-z0-9]+)*$")


def create_package(dist: str, *, module: str | None = None, summary: str, root: Path = ROOT) -> Path:
    """Render the template into ``root/packages/<dist>``; return that folder."""
    if not DIST_PATTERN.match(dist):
        raise ValueError(f"distribution name {dist!r} must be lowercase words joined by '-', e.g. 'kandinsky-cp'")
    module = module or dist.replace("-", "_")
    if not module.isidentifier() or keyword.iskeyword(module):
        raise ValueError(f"import name {module!r} is not a valid Python identifier")
    if not summary.strip() or '"' in summary:
        raise ValueError("summary must be a non-empty one-line description without double quotes")
    target = root / "packages" / dist
    if target.exists():
        raise FileExistsError(f"{target} already exists")
    replacements = {"__DIST__": dist, "__MODULE__": module, "__SUMMARY__": summary.strip()}
    for source in sorted(TEMPLATE.rglob("*")):
        if source.is_dir() or "__pycache__" in source.parts:
            continue
        relative = str(source.relative_to(TEMPLATE))
        text = source.read_text()
        for key, value in replacements.items():
            relative = relative.replace(key, value)
            text = text.replace(key, value)
        destination = target / relative
        destination.parent.mkdir(parents=True, exist_ok=True)
        destination.write_text(text)
    return target


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("dist", help="distribution name, e.g. kandinsky-cp")
    parser.add_argument("--module", help="import name (default: dist with '-' -> '_')")
    parser.add_argument("--summary", required=True, help="one-line description")
    args = parser.parse_args(argv)
    try:
        target = create_package(args.dist, module=args.module, summary=args.summary)
    except (ValueError, FileExistsError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    print(f"created {target.relative_to(ROOT)}; add it to the README's package table")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
