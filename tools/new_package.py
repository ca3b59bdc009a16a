"""Create packages/<dist>/ with the monorepo's standard shape from tools/templates/package.

    python tools/new_package.py fastpd --summary "Exact partial dependence for tree ensembles" \\
        --paper "J. Doe, R. Roe (ICML 2025). Title of the paper."
    python tools/new_package.py quest-qat --module quest --summary "..." --paper "..."

Besides rendering the template it copies the root LICENSE into the package, appends the package to
hatch.toml (the default environment's workspace members and the pkg matrix) and appends a row to the
root README's package table. Every file is checked before anything is written: when hatch.toml or the
README lacks the expected anchors, nothing changes and the error says what is missing.
"""

from __future__ import annotations

import argparse
import keyword
import re
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TEMPLATE = ROOT / "tools" / "templates" / "package"
DIST_PATTERN = re.compile(r"^[a-z][a-z0-9]*(-[a-z0-9]+)*$")
NEW_STATUS = "new: not yet measured"

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - the dev environment is 3.11
    import tomli as tomllib


class AnchorError(ValueError):
    """hatch.toml or the root README does not have the shape new_package.py edits."""


@dataclass(frozen=True)
class Names:
    """The names substituted into the template."""

    dist: str
    module: str
    summary: str
    paper: str


def _list_block(lines: list[str], section: str, key: str, path: Path) -> tuple[int, int]:
    """(index of the ``key = [`` line, index of its closing ``]``) inside TOML table ``section``."""
    try:
        start = next(i for i, line in enumerate(lines) if line.strip() == section)
    except StopIteration:
        raise AnchorError(f"{path.name} has no `{section}` table") from None
    for i in range(start + 1, len(lines)):
        stripped = lines[i].strip()
        if stripped.startswith("[") and not stripped.startswith(f"{key}"):
            break
        if re.match(rf"^{re.escape(key)}\s*=\s*\[\s*$", stripped):
            for j in range(i + 1, len(lines)):
                if lines[j].strip() == "]":
                    return i, j
                if lines[j].strip().startswith("["):
                    break
            raise AnchorError(f"{path.name}: `{key} = [` under `{section}` is not closed by a line `]`")
    raise AnchorError(f"{path.name}: `{section}` has no multi-line `{key} = [` list (one entry per line, "
                      "closed by a line `]`)")


def register_in_hatch(text: str, dist: str, path: Path = Path("hatch.toml")) -> str:
    """``text`` of hatch.toml with ``dist`` appended to the workspace members and the pkg matrix.

    Parameters
    ----------
    text : str
        The current hatch.toml.
    dist : str
        The new distribution (its folder under packages/).
    path : Path, optional
        Named in errors.

    Returns
    -------
    str
        The new text; the rest of the file is unchanged.
    """
    config = tomllib.loads(text)
    members = config.get("envs", {}).get("default", {}).get("workspace", {}).get("members")
    if not isinstance(members, list):
        raise AnchorError(f"{path.name} has no [envs.default] workspace.members list")
    paths = [m.get("path") if isinstance(m, dict) else m for m in members]
    if f"packages/{dist}" in paths:
        raise AnchorError(f"{path.name} already lists packages/{dist} in [envs.default] workspace.members")
    lines = text.splitlines(keepends=True)
    _, close = _list_block(lines, "[envs.default]", "workspace.members", path)
    previous = lines[close - 1]
    if not re.match(r'^\s*\{ path = "(shared|packages/[^"]+)", features = \[[^\]]*\] \},\s*$', previous):
        raise AnchorError(f"{path.name}: the last workspace member is not of the form "
                          '`{ path = "packages/<dist>", features = ["test"] },`')
    indent = previous[: len(previous) - len(previous.lstrip())]
    lines.insert(close, f'{indent}{{ path = "packages/{dist}", features = ["test"] }},\n')
    _, close = _list_block(lines, "[[envs.pkg.matrix]]", "package", path)
    previous = lines[close - 1]
    if not re.match(r'^\s*"[^"]+",\s*$', previous):
        raise AnchorError(f'{path.name}: the last [[envs.pkg.matrix]] package entry is not of the form `"<dist>",`')
    indent = previous[: len(previous) - len(previous.lstrip())]
    lines.insert(close, f'{indent}"{dist}",\n')
    new = "".join(lines)
    check = tomllib.loads(new)
    assert check["envs"]["default"]["workspace"]["members"][-1]["path"] == f"packages/{dist}"
    assert check["envs"]["pkg"]["matrix"][0]["package"][-1] == dist
    return new


README_CELLS = {
    "distribution": lambda n: f"[{n.dist}](packages/{n.dist})",
    "import": lambda n: f"`{n.module}`",
    "paper": lambda n: n.summary,
    "status": lambda n: NEW_STATUS,
    "install": lambda n: f'`pip install ./shared "./packages/{n.dist}[cli]"`',  # the template's [tool.icml25] install
}


def _cells(line: str) -> list[str]:
    return [cell.strip() for cell in line.strip().strip("|").split("|")]


def register_in_readme(text: str, names: Names, path: Path = Path("README.md")) -> str:
    """``text`` of the root README with a row for the new package appended to its package table.

    Parameters
    ----------
    text : str
        The current README.
    names : Names
        The new package's names.
    path : Path, optional
        Named in errors.

    Returns
    -------
    str
        The new text: the row follows the table's last row, one cell per column (columns are recognised by
        the first word of their header: distribution, import, paper, status, install).
    """
    lines = text.splitlines(keepends=True)
    try:
        head = next(i for i, line in enumerate(lines) if line.startswith("| distribution | import |"))
    except StopIteration:
        raise AnchorError(f"{path.name} has no package table (a header row starting `| distribution | import |`)") \
            from None
    if head + 1 >= len(lines) or not re.match(r"^\|(\s*:?-+:?\s*\|)+\s*$", lines[head + 1]):
        raise AnchorError(f"{path.name}: the package table's header is not followed by a `|---|` row")
    end = head + 2
    while end < len(lines) and lines[end].startswith("|"):
        if f"[{names.dist}](packages/{names.dist})" in lines[end]:
            raise AnchorError(f"{path.name}'s package table already has a row for {names.dist}")
        end += 1
    headers = _cells(lines[head])
    cells = []
    for header in headers:
        word = header.split()[0].lower() if header.split() else ""
        if word not in README_CELLS:
            raise AnchorError(f"{path.name}: the package table's column {header!r} is not one new_package.py "
                              f"fills ({', '.join(README_CELLS)})")
        cells.append(README_CELLS[word](names).replace("|", "\\|"))
    row = "| " + " | ".join(cells) + " |\n"
    if not lines[end - 1].endswith("\n"):
        lines[end - 1] += "\n"
    lines.insert(end, row)
    return "".join(lines)


def _check_text(value: str, what: str) -> str:
    value = " ".join(value.split())
    if not value or '"' in value or "\\" in value:
        raise ValueError(f"{what} must be a non-empty one-line text without double quotes or backslashes")
    return value


UNKNOWN_PAPER = "its ICML 2025 paper (citation not recorded yet)"


def create_package(dist: str, *, module: str | None = None, summary: str, paper: str | None = None,
                   root: Path = ROOT, register: bool | None = None) -> Path:
    """Render the template into ``root/packages/<dist>`` and register it; return that folder.

    Parameters
    ----------
    dist : str
        Distribution name (lowercase words joined by '-').
    module : str, optional
        Import name (default: ``dist`` with '-' replaced by '_').
    summary : str
        One-line description (the distribution's summary; a trailing period is dropped).
    paper : str, optional
        The paper's citation, e.g. "J. Doe, R. Roe (ICML 2025). Title." (the command line requires it).
    root : Path, optional
        Repository root holding LICENSE, hatch.toml and README.md.
    register : bool, optional
        Also append the package to hatch.toml and the README's package table (both must then exist and have
        their anchors). Default: when ``root`` has a hatch.toml (the command line always registers).

    Returns
    -------
    Path
        The new package folder.
    """
    if not DIST_PATTERN.match(dist):
        raise ValueError(f"distribution name {dist!r} must be lowercase words joined by '-', e.g. 'kandinsky-cp'")
    module = module or dist.replace("-", "_")
    if not module.isidentifier() or keyword.iskeyword(module):
        raise ValueError(f"import name {module!r} is not a valid Python identifier")
    names = Names(dist, module, _check_text(summary, "summary").rstrip("."),
                  UNKNOWN_PAPER if paper is None else _check_text(paper, "paper"))
    target = root / "packages" / dist
    if target.exists():
        raise FileExistsError(f"{target} already exists")
    # The root's LICENSE (this checkout's when ``root`` is a bare folder, e.g. in tests).
    license_file = next((p for p in (root / "LICENSE", ROOT / "LICENSE") if p.is_file()), None)
    if license_file is None:
        raise AnchorError(f"{root / 'LICENSE'} is missing: every package ships a copy of the root LICENSE")
    edits: dict[Path, str] = {}
    if register is None:
        register = (root / "hatch.toml").is_file()
    if register:  # everything is checked before anything is written
        for name, edit in (("hatch.toml", lambda t, p: register_in_hatch(t, dist, p)),
                           ("README.md", lambda t, p: register_in_readme(t, names, p))):
            path = root / name
            if not path.is_file():
                raise AnchorError(f"{path} is missing")
            edits[path] = edit(path.read_text(), path)
    replacements = {"__DIST__": dist, "__MODULE__": module, "__SUMMARY__": names.summary, "__PAPER__": names.paper}
    rendered: dict[Path, str] = {}
    for source in sorted(TEMPLATE.rglob("*")):
        if source.is_dir() or "__pycache__" in source.parts or source.suffix == ".pyc":
            continue
        relative = str(source.relative_to(TEMPLATE))
        text = source.read_text()
        for key, value in replacements.items():
            relative = relative.replace(key, value)
            text = text.replace(key, value)
        rendered[target / relative] = text
    rendered[target / "pyproject.toml"] = _with_urls(rendered[target / "pyproject.toml"], root, dist)
    for destination, text in rendered.items():
        destination.parent.mkdir(parents=True, exist_ok=True)
        destination.write_text(text)
    shutil.copyfile(license_file, target / "LICENSE")
    for path, text in edits.items():
        path.write_text(text)
    return target


def _with_urls(pyproject: str, root: Path, dist: str) -> str:
    """The pyproject text with the [project.urls] that tools/release.py derives from the root's repository."""
    if not (root / "pyproject.toml").is_file():
        return pyproject
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import release

    urls = release.expected_urls(release.repository(root), f"packages/{dist}")
    return release.rewrite_urls(pyproject, urls) if urls is not None else pyproject


def main(argv: list[str] | None = None) -> int:
    """Create a package from the command line; return the exit code (2 on a refused request).

    Parameters
    ----------
    argv : list of str, optional
        Arguments (default ``sys.argv[1:]``).

    Returns
    -------
    int
        0 when the package was created, 2 when it was refused.
    """
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("dist", help="distribution name, e.g. kandinsky-cp")
    parser.add_argument("--module", help="import name (default: dist with '-' -> '_')")
    parser.add_argument("--summary", required=True, help="one-line description")
    parser.add_argument("--paper", required=True, help='citation, e.g. "J. Doe, R. Roe (ICML 2025). Title."')
    parser.add_argument("--root", type=Path, default=ROOT, help="repository root (default: this checkout)")
    args = parser.parse_args(argv)
    try:
        target = create_package(args.dist, module=args.module, summary=args.summary, paper=args.paper,
                                root=args.root, register=True)
    except (ValueError, FileExistsError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    print(f"created {target}; registered in hatch.toml and the README's package table")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
