"""Release helpers: resolve a release tag (CI's release workflow) and keep project URLs in one place.

    python tools/release.py fastpd-v0.2.0   # prints dist=fastpd, folder=packages/fastpd, version=0.2.0
    python tools/release.py urls --check     # every member's [project.urls] agrees with the root pyproject
    python tools/release.py urls --write     # rewrite them from it

The repository URL is set once, in the root pyproject.toml (``[tool.icml25] repository``). From it every
member's ``[project.urls]`` is derived: Homepage and Source are the URL, Issues is ``<url>/issues`` and
Changelog is ``<url>/blob/main/<folder>/CHANGELOG.md``. An empty URL (no public repository yet) means no
``[project.urls]`` table at all: an address is never invented.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - CI's dev environment is 3.11
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[1]
TAG = re.compile(r"^(?P<dist>[a-z][a-z0-9-]*?)-v(?P<version>\d+(\.\d+)*([ab]|rc)?\d*(\.post\d+)?(\.dev\d+)?)$")
URLS_HEADER = "[project.urls]"
_TABLE_HEADER = re.compile(r"^\[\[?[A-Za-z\"']")


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


def repository(root: Path = ROOT) -> str:
    """The repository URL from the root pyproject's ``[tool.icml25] repository`` ('' when unset)."""
    config = tomllib.loads((root / "pyproject.toml").read_text())
    url = config.get("tool", {}).get("icml25", {}).get("repository", "")
    if not isinstance(url, str):
        raise ValueError(f"{root / 'pyproject.toml'}: [tool.icml25] repository must be a string, got {url!r}")
    url = url.strip().rstrip("/")
    return url[: -len(".git")] if url.endswith(".git") else url


def expected_urls(url: str, folder: str) -> dict[str, str] | None:
    """The ``[project.urls]`` a member in ``folder`` (e.g. 'packages/fastpd') must have; None: no table."""
    if not url:
        return None
    return {"Homepage": url, "Source": url, "Issues": f"{url}/issues",
            "Changelog": f"{url}/blob/main/{folder}/CHANGELOG.md"}


def member_folders(root: Path = ROOT) -> list[str]:
    """'shared' and every 'packages/<dist>' with a pyproject, sorted."""
    folders = ["shared"] if (root / "shared" / "pyproject.toml").exists() else []
    if (root / "packages").is_dir():
        folders += [f"packages/{p.name}" for p in sorted((root / "packages").iterdir())
                    if (p / "pyproject.toml").exists()]
    return folders


def urls_line(pyproject: Path) -> int:
    """The line of the ``[project.urls]`` header (else of ``[project]``, else 1)."""
    lines = pyproject.read_text().splitlines()
    for header in (URLS_HEADER, "[project]"):
        for number, line in enumerate(lines, 1):
            if line.strip() == header:
                return number
    return 1


def url_problem(root: Path, folder: str, url: str | None = None) -> str | None:
    """Why ``folder``'s ``[project.urls]`` disagrees with the root's repository URL (None: it agrees)."""
    url = repository(root) if url is None else url
    pyproject = root / folder / "pyproject.toml"
    have = tomllib.loads(pyproject.read_text()).get("project", {}).get("urls")
    want = expected_urls(url, folder)
    if want is None:
        if have is not None:
            return ("has a [project.urls] table but [tool.icml25] repository in the root pyproject.toml is empty; "
                    "run `python tools/release.py urls --write`")
        return None
    if have != want:
        return (f"[project.urls] is {have!r}, expected {want!r} from [tool.icml25] repository; "
                "run `python tools/release.py urls --write`")
    return None


def render_urls(urls: dict[str, str]) -> str:
    return URLS_HEADER + "\n" + "".join(f'{key} = "{value}"\n' for key, value in urls.items())


def rewrite_urls(text: str, urls: dict[str, str] | None) -> str:
    """``text`` (a pyproject) with its ``[project.urls]`` table replaced by ``urls`` (removed when None)."""
    lines = text.splitlines(keepends=True)
    start = next((i for i, line in enumerate(lines) if line.strip() == URLS_HEADER), None)
    if start is not None:  # drop the old table and the blank lines after it
        end = start + 1
        while end < len(lines) and not _TABLE_HEADER.match(lines[end]):
            end += 1
        del lines[start:end]
    if urls is None:
        return "".join(lines)
    project = next((i for i, line in enumerate(lines) if line.strip() == "[project]"), None)
    if project is None:
        raise ValueError("pyproject has no [project] table")
    at = next((i for i in range(project + 1, len(lines)) if _TABLE_HEADER.match(lines[i])), len(lines))
    block = render_urls(urls)
    if at == len(lines):
        if lines and not lines[-1].endswith("\n"):
            lines[-1] += "\n"
        lines.append("\n" + block)
    else:
        lines.insert(at, block + "\n")
    return "".join(lines)


def command_urls(root: Path, *, write: bool) -> int:
    url = repository(root)
    bad = 0
    for folder in member_folders(root):
        pyproject = root / folder / "pyproject.toml"
        problem = url_problem(root, folder, url)
        if problem is None:
            continue
        if write:
            pyproject.write_text(rewrite_urls(pyproject.read_text(), expected_urls(url, folder)))
            print(f"{folder}/pyproject.toml: [project.urls] {'written' if url else 'removed'}")
            if url_problem(root, folder, url) is not None:  # pragma: no cover - rewrite_urls is tested
                print(f"{folder}/pyproject.toml:1: rewriting [project.urls] did not fix it", file=sys.stderr)
                bad += 1
        else:
            print(f"{folder}/pyproject.toml:{urls_line(pyproject)}: {problem}")
            bad += 1
    shown = url or "(empty: no [project.urls])"
    print(f"urls: {len(member_folders(root))} member(s), repository {shown}, {bad} problem(s)")
    return 1 if bad else 0


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "urls":
        parser = argparse.ArgumentParser(prog="python tools/release.py urls",
                                         description="check or write every member's [project.urls]")
        mode = parser.add_mutually_exclusive_group(required=True)
        mode.add_argument("--check", action="store_true", help="exit 1 when a member disagrees")
        mode.add_argument("--write", action="store_true", help="rewrite the members that disagree")
        parser.add_argument("--root", type=Path, default=ROOT, help="workspace root (for tests)")
        args = parser.parse_args(argv[1:])
        return command_urls(args.root, write=args.write)
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
