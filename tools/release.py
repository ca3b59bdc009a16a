"""Resolve a release tag ``<distribution>-v<version>`` to its folder (CI's release workflow).

    python tools/release.py fastpd-v0.2.0   # prints dist=fastpd, folder=packages/fastpd, version=0.2.0
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TAG = re.compile(r"^(?P<dist>[a-z][a-z0-9-]*?)-v(?P<version>\d+(\.\d+)*([ab]|rc)?\d*(\.post\d+)?(\.dev\d+)?)$")


def resolve(tag: str, root: Path = ROOT) -> dict[str, str]:
    match = TAG.match(tag)
    if not match:
        raise ValueError(f"tag {tag!r} is not <distribution>-v<version>, e.g. fastpd-v0.2.0")
    dist, version = match.group("dist"), match.group("version")
    folder = "shared" if dist == "icml25-shared" else f"packages/{dist}"
    if not (root / folder / "pyproject.toml").exists():
        known = ["icml25-shared"] + sorted(p.name for p in (root / "packages").iterdir() if p.is_dir())
        raise ValueError(f"tag {tag!r} names distribution {dist!r}, which is not one of {known}")
    return {"dist": dist, "folder": folder, "version": version}


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    try:
        info = resolve(argv[0])
    except ValueError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    for key, value in info.items():
        print(f"{key}={value}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
