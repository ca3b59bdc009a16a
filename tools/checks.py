"""Structural checks of the monorepo that no maintained tool does, used by CI.

(Imports between members: import-linter; declared dependencies: deptry; types: mypy. See tools/dev.py static.)

    python tools/checks.py wheels [PKG ...]   # (c) hatch builds wheel + sdist once; both hold LICENSE and
                                              #     py.typed and no studies/ file; `twine check --strict`
                                              #     passes; a fresh venv with only the bare wheels (the
                                              #     package's and the shared one) holds no matplotlib/tqdm
                                              #     unless the core declares them, imports the package and
                                              #     every name of its __all__, and its `demo`/`reproduce`
                                              #     (dry run) name `pip install "<dist>[cli]"` in one line;
                                              #     then, in a venv from the documented install line,
                                              #     `demo --quick` and the README's python blocks run
    python tools/checks.py shape [--root R]   # (d) every member has the monorepo's shape (README sections,
                                              #     no process words, LICENSE, py.typed, CHANGELOG, DATA.md,
                                              #     extras, project URLs, tests/test_param_contract.py calling
                                              #     assert_rejects, install lines; see check_shape)
    python tools/checks.py readme [--write]   # the install line of every package, from its [tool.icml25]
                                              #     install: in its README and the root table (--write
                                              #     renders the root table's column)
    python tools/checks.py figures [PKG ...] [--reproduce]
                                              # every figure each package's `demo --quick` (with --reproduce
                                              #     also `reproduce --quick`) saves is checked as it is saved:
                                              #     no text overlaps other text, every axis is labelled
                                              #     (icml25_shared.testing.figure_problems at its own size);
                                              #     [tool.icml25.stored-figures] are drawn from stored JSON

Each failure is printed as ``path:line: message``; the exit code is 1 when anything failed.
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - CI's dev environment is 3.11
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[1]
CONSTRAINTS = ROOT / "tools" / "constraints.txt"
SHARED_IMPORT = "icml25_shared"

@dataclass(frozen=True)
class Member:
    """One distribution of the workspace."""

    dist: str
    module: str
    path: Path
    dependencies: tuple[str, ...]  # requirement strings, base and every extra
    extras: dict[str, tuple[str, ...]]  # extra name -> its requirement strings

    @property
    def src(self) -> Path:
        return self.path / "src" / self.module


@dataclass(frozen=True)
class Problem:
    path: Path
    line: int
    message: str

    def __str__(self) -> str:
        try:
            shown = self.path.relative_to(ROOT)
        except ValueError:
            shown = self.path
        return f"{shown}:{self.line}: {self.message}"


def normalise(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def requirement_name(requirement: str) -> str:
    return parse_requirement(requirement)[0]


def parse_requirement(requirement: str) -> tuple[str, tuple[str, ...]]:
    """(normalised distribution name, extras) of a PEP 508 requirement string."""
    match = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(?:\[([^\]]*)\])?", requirement)
    if not match:
        raise ValueError(f"cannot parse requirement {requirement!r}")
    extras = tuple(e.strip() for e in (match.group(2) or "").split(",") if e.strip())
    return normalise(match.group(1)), extras


def read_member(path: Path) -> Member:
    """Read a distribution's name, import package and all declared requirements from its pyproject."""
    config = tomllib.loads((path / "pyproject.toml").read_text())
    project = config["project"]
    deps = list(project.get("dependencies", []))
    for extra in project.get("optional-dependencies", {}).values():
        deps.extend(extra)
    packages = config.get("tool", {}).get("hatch", {}).get("build", {}).get("targets", {}).get("wheel", {})
    packages = packages.get("packages", [])
    if len(packages) != 1:
        raise ValueError(f"{path}/pyproject.toml must name exactly one wheel package, got {packages}")
    extras = {name: tuple(reqs) for name, reqs in project.get("optional-dependencies", {}).items()}
    return Member(dist=project["name"], module=Path(packages[0]).name, path=path, dependencies=tuple(deps),
                  extras=extras)


def workspace(root: Path = ROOT) -> list[Member]:
    """The shared distribution first, then every package under packages/ (sorted)."""
    members = [read_member(root / "shared")]
    members += [read_member(p) for p in sorted((root / "packages").iterdir()) if (p / "pyproject.toml").exists()]
    return members


def python_files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*.py") if "__pycache__" not in p.parts) if folder.exists() else []


# --- (d) shape -------------------------------------------------------------------------------------------

README_MAX_LINES = 220
README_SECTIONS = ("Install", "Example", "API", "Agreement with peers", "Benchmark", "Reproduction", "Limits")
# Words about how the work was organised, not about the method: they belong in studies/ and CHANGELOGs.
PROCESS_WORDS = tuple(re.compile(pattern, re.IGNORECASE) for pattern in (
    r"\bissues? #?\d+",
    r"(?<![\w&\[])#\d+\b",  # not a SMARTS atom ([#7]) or an HTML entity
    r"\bitems? \d+",
    r"\bacceptance\b",
    r"pre-?registered",
    r"\b(outside|independent) review",
    r"\b(this|last|next|previous|earlier) session\b",
    # a round of work, not a protocol's round ("the next round announces the model" is domain language)
    r"\b(numbers|results|figures|fixes|changes|work|review|reruns?|runs?) (from|of|in) "
    r"(this|the last|the previous|an earlier|the earlier) round\b",
    r"\bround[- ]\d+ (re)?run",
))
# Extra names that have a canonical spelling in this monorepo.
EXTRA_NAMES = {"peer": "peers", "bench": "peers or demo", "benchmark": "peers or demo",
               "benchmarks": "peers or demo", "dataset": "data", "datasets": "data", "examples": "demo"}
RESULT_SUFFIXES = (".json", ".png", ".csv")


def line_of(path: Path, pattern: str) -> int:
    """The first line of ``path`` matching the regex ``pattern`` (1 when none does)."""
    regex = re.compile(pattern)
    for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
        if regex.search(line):
            return number
    return 1


def headings(text: str) -> list[tuple[str, int]]:
    """The ``## `` headings of a markdown text with their lines, skipping fenced code blocks."""
    found, fence = [], None
    for number, line in enumerate(text.splitlines(), 1):
        stripped = line.lstrip()
        if stripped.startswith(("```", "~~~")):
            marker = stripped[:3]
            fence = marker if fence is None else (None if marker == fence else fence)
            continue
        if fence is None and line.startswith("## "):
            found.append((line[3:].strip(), number))
    return found


def readme_problems(path: Path) -> list[Problem]:
    """Length and ``##`` sections of a package README (see README_SECTIONS)."""
    text = path.read_text(errors="replace")
    problems = []
    count = len(text.splitlines())
    if count > README_MAX_LINES:
        problems.append(Problem(path, README_MAX_LINES + 1, f"README has {count} lines, at most {README_MAX_LINES}; "
                                                            "move longer material to studies/"))
    found = headings(text)
    names = [name for name, _ in found]
    for section in README_SECTIONS:
        if section not in names:
            problems.append(Problem(path, 1, f"README has no '## {section}' section (the sections are, in order: "
                                             f"{', '.join(README_SECTIONS)})"))
    seen: set[str] = set()
    previous = -1
    for name, line in found:
        if name not in README_SECTIONS:
            continue
        if name in seen:
            problems.append(Problem(path, line, f"'## {name}' appears more than once"))
            continue
        seen.add(name)
        index = README_SECTIONS.index(name)
        if index < previous:
            problems.append(Problem(path, line, f"'## {name}' comes after '## {README_SECTIONS[previous]}'; "
                                                f"the order is {', '.join(README_SECTIONS)}"))
        previous = max(previous, index)
    reproduction = next((line for name, line in found if name == "Reproduction"), None)
    for name, line in found:
        if name not in README_SECTIONS and (reproduction is None or line < reproduction):
            problems.append(Problem(path, line, f"'## {name}' is not one of the standard sections; other sections "
                                                "are allowed only after '## Reproduction'"))
    return problems


def process_word_problems(path: Path) -> list[Problem]:
    """Every line of ``path`` that contains one of PROCESS_WORDS."""
    problems = []
    for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
        words = [match.group(0) for regex in PROCESS_WORDS for match in regex.finditer(line)]
        if words:
            shown = ", ".join(repr(w) for w in dict.fromkeys(words))
            problems.append(Problem(path, number, f"process word {shown}; say what the code or result is, "
                                                  "not how the work went (studies/ and CHANGELOG are for that)"))
    return problems


def data_files(member: Member) -> list[Path]:
    """Files the member ships besides code: non-.py files under src/<module>/ (not py.typed) and data/."""
    found = []
    if member.src.is_dir():
        found += [p for p in member.src.rglob("*") if p.is_file() and p.suffix not in (".py", ".pyc")
                  and p.name != "py.typed" and "__pycache__" not in p.parts]
    for folder in (member.path / "data", member.src / "data"):
        if folder.is_dir() and folder not in found:
            found.append(folder)
    return sorted(found)


def release_files_problems(member: Member, root: Path) -> list[Problem]:
    """LICENSE (a copy of the root's), py.typed and CHANGELOG.md of one member."""
    problems = []
    license_file = member.path / "LICENSE"
    if not license_file.is_file():
        problems.append(Problem(license_file, 1, "LICENSE is missing (copy the root LICENSE)"))
    elif (root / "LICENSE").is_file() and license_file.read_bytes() != (root / "LICENSE").read_bytes():
        problems.append(Problem(license_file, 1, "LICENSE differs from the root LICENSE (copy it byte for byte)"))
    if not (member.src / "py.typed").is_file():
        problems.append(Problem(member.src / "py.typed", 1, "py.typed is missing (the package is typed)"))
    if not (member.path / "CHANGELOG.md").is_file():
        problems.append(Problem(member.path / "CHANGELOG.md", 1, "CHANGELOG.md is missing"))
    return problems


def pyproject_problems(member: Member, root: Path) -> list[Problem]:
    """sdist excludes studies/, the extras' names, and [project.urls] from the root's repository URL."""
    import release

    pyproject = member.path / "pyproject.toml"
    config = tomllib.loads(pyproject.read_text())
    problems = []
    sdist = config.get("tool", {}).get("hatch", {}).get("build", {}).get("targets", {}).get("sdist", {})
    if "/studies" not in sdist.get("exclude", []):
        problems.append(Problem(pyproject, line_of(pyproject, r"^\[tool\.hatch\.build\.targets\.sdist\]"),
                                'the sdist target must exclude "/studies" '
                                '([tool.hatch.build.targets.sdist] exclude = ["/studies"])'))
    if member.module != SHARED_IMPORT and "test" not in member.extras:
        problems.append(Problem(pyproject, line_of(pyproject, r"^\[project\.optional-dependencies\]"),
                                "no `test` extra (the tests' requirements)"))
    for extra in member.extras:
        if normalise(extra) in EXTRA_NAMES:
            problems.append(Problem(pyproject, line_of(pyproject, rf"^\s*{re.escape(extra)}\s*="),
                                    f"extra {extra!r}: use the canonical name {EXTRA_NAMES[normalise(extra)]!r}"))
    folder = member.path.relative_to(root).as_posix()
    problem = release.url_problem(root, folder)
    if problem is not None:
        problems.append(Problem(pyproject, release.urls_line(pyproject), problem))
    return problems


def install_extras(member: Member) -> list[str] | None:
    """The extras of the member's documented install line: ``[tool.icml25] install`` of its pyproject."""
    config = tomllib.loads((member.path / "pyproject.toml").read_text())
    extras = config.get("tool", {}).get("icml25", {}).get("install")
    return None if extras is None else [str(e) for e in extras]


def install_line(member: Member) -> str:
    """The one install command of a package, from its metadata (from a clone: shared is not on PyPI yet)."""
    extras = install_extras(member) or []
    folder = f"./packages/{member.path.name}" + (f"[{','.join(extras)}]" if extras else "")
    return f'pip install ./shared "{folder}"'


def install_problems(member: Member, root: Path) -> list[Problem]:
    """``[tool.icml25] install`` names declared extras covering the CLI; both READMEs show its line."""
    pyproject = member.path / "pyproject.toml"
    extras = install_extras(member)
    if extras is None:
        return [Problem(pyproject, 1, '[tool.icml25] install = [...] is missing: the extras of the documented '
                                      'install line (the README\'s examples and `demo` must run with them)')]
    problems = [Problem(pyproject, line_of(pyproject, r"^install\s*="), f"install names extra {e!r}, which "
                                                                         "[project.optional-dependencies] lacks")
                for e in extras if e not in member.extras]
    covered = {name for e in extras for r in member.extras.get(e, ())
               for name in [parse_requirement(r)] if name[0] == "icml25-shared" and "cli" in name[1]}
    if "cli" not in extras and not covered:
        problems.append(Problem(pyproject, line_of(pyproject, r"^install\s*="),
                                "install covers no `cli` extra: `python -m <pkg> demo` needs matplotlib and tqdm"))
    line = install_line(member)
    readme = member.path / "README.md"
    if readme.is_file() and line not in readme.read_text():
        problems.append(Problem(readme, line_of(readme, r"^## Install"), f"the Install section does not show `{line}` "
                                                                         "(from [tool.icml25] install)"))
    root_readme = root / "README.md"
    if root_readme.is_file():
        row = next((r for r in root_readme.read_text().splitlines() if r.startswith(f"| [{member.dist}]")), None)
        if row is None:
            problems.append(Problem(root_readme, 1, f"the package table has no row for {member.dist}"))
        elif not row.rstrip().endswith(f"| `{line}` |"):
            problems.append(Problem(root_readme, line_of(root_readme, rf"^\| \[{re.escape(member.dist)}\]"),
                                    f"the install cell of {member.dist} is not `{line}` "
                                    "(`python tools/checks.py readme --write` renders it from [tool.icml25] install)"))
    return problems


def write_install_cells(members: list[Member], root: Path) -> bool:
    """Render the root README's install column from each package's ``[tool.icml25] install``; True if changed."""
    readme = root / "README.md"
    text = readme.read_text()
    lines = text.splitlines(keepends=True)
    for member in members:
        if member.module == SHARED_IMPORT or install_extras(member) is None:
            continue
        for i, row in enumerate(lines):
            if row.startswith(f"| [{member.dist}]"):
                cells = row.rstrip("\n").rstrip().rstrip("|").rsplit(" | ", 1)
                lines[i] = f"{cells[0]} | `{install_line(member)}` |\n"
    new = "".join(lines)
    if new != text:
        readme.write_text(new)
    return new != text


def param_contract_problems(member: Member) -> list[Problem]:
    """tests/test_param_contract.py exists and calls ``icml25_shared.testing.assert_rejects``."""
    path = member.path / "tests" / "test_param_contract.py"
    if not path.is_file():
        return [Problem(path, 1, "tests/test_param_contract.py is missing: call icml25_shared.testing.assert_rejects "
                                 "on each public entry point (a wrong type -> TypeError, a wrong value -> ValueError, "
                                 "both naming the parameter)")]
    tree = ast.parse(path.read_text(), filename=str(path))
    imported = any(isinstance(node, ast.ImportFrom) and node.module == "icml25_shared.testing"
                   and any(alias.name == "assert_rejects" for alias in node.names) for node in ast.walk(tree))
    calls = sum(isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "assert_rejects"
                for node in ast.walk(tree))
    if not imported or not calls:
        return [Problem(path, 1, "tests/test_param_contract.py does not call assert_rejects imported from "
                                 "icml25_shared.testing")]
    return []


def check_shape(members: list[Member], root: Path = ROOT) -> list[Problem]:
    """(d) the shape every member shares (the module docstring's list)."""
    problems: list[Problem] = []
    for member in members:
        problems += release_files_problems(member, root)
        problems += pyproject_problems(member, root)
        if member.module == SHARED_IMPORT:
            continue
        problems += param_contract_problems(member)
        problems += install_problems(member, root)
        readme = member.path / "README.md"
        if readme.is_file():
            problems += readme_problems(readme)
            problems += process_word_problems(readme)
        else:
            problems.append(Problem(readme, 1, "README.md is missing"))
        for path in python_files(member.src):
            problems += process_word_problems(path)
        shipped = data_files(member)
        if shipped and not (member.path / "DATA.md").is_file():
            names = ", ".join(str(p.relative_to(member.path)) for p in shipped[:3])
            problems.append(Problem(member.path / "DATA.md", 1, f"DATA.md is missing but the package ships data "
                                                                f"({names}{', ...' if len(shipped) > 3 else ''}): "
                                                                "give each file's provenance and licence"))
        docs = member.path / "docs"
        results = sorted(p for p in docs.rglob("*") if p.suffix.lower() in RESULT_SUFFIXES) if docs.is_dir() else []
        if results:
            problems.append(Problem(results[0], 1, f"docs/ holds {len(results)} result file(s) (json/png/csv); "
                                                   "stored results live in results/"))
    return problems


def _run(cmd: list[str], *, cwd: Path | None = None, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True)


def build(member: Member, out: Path) -> tuple[Path | None, Path | None, list[Problem]]:
    """``hatch build`` the member's wheel and sdist (one call) into ``out``; return them and any problems."""
    hatch = shutil.which("hatch") or str(Path(sys.executable).parent / "hatch")
    done = _run([hatch, "build", "-t", "wheel", "-t", "sdist", str(out)], cwd=member.path)
    if done.returncode != 0:
        return None, None, [Problem(member.path / "pyproject.toml", 1, f"hatch build failed:\n{done.stderr[-2000:]}")]
    stem = member.dist.replace("-", "_")
    wheels, sdists = sorted(out.glob(f"{stem}-*.whl")), sorted(out.glob(f"{stem}-*.tar.gz"))
    problems = []
    if not wheels:
        problems.append(Problem(member.path / "pyproject.toml", 1, "hatch build produced no wheel"))
    if not sdists:
        problems.append(Problem(member.path / "pyproject.toml", 1, "hatch build produced no sdist"))
    return (wheels[-1] if wheels else None), (sdists[-1] if sdists else None), problems


def shared_build(shared: Member) -> tuple[Path | None, Path | None, list[Problem]]:
    """The shared distribution's wheel and sdist, built once per commit and content of shared/.

    Every ``checks.py wheels <pkg>`` process needs the shared wheel; the gate runs one per package. The
    build lands in a private folder that is renamed into the cache, so concurrent checks never see half
    a build.
    """
    digest = hashlib.sha256()
    head = _run(["git", "rev-parse", "HEAD"], cwd=shared.path).stdout.strip()
    digest.update(head.encode())
    for path in sorted(p for p in shared.path.rglob("*") if p.is_file() and "__pycache__" not in p.parts):
        digest.update(str(path.relative_to(shared.path)).encode() + b"\0" + path.read_bytes())
    cache = Path(tempfile.gettempdir()) / f"icml25-shared-build-{digest.hexdigest()[:20]}"
    stem = shared.dist.replace("-", "_")
    wheels, sdists = sorted(cache.glob(f"{stem}-*.whl")), sorted(cache.glob(f"{stem}-*.tar.gz"))
    if wheels and sdists:
        return wheels[-1], sdists[-1], []
    private = Path(tempfile.mkdtemp(prefix="icml25-shared-build-tmp-"))
    wheel, sdist, problems = build(shared, private)
    if problems:
        return wheel, sdist, problems
    try:
        private.rename(cache)
    except OSError:  # another check was faster (or the cache is not writable): use our own copy
        return wheel, sdist, []
    return (cache / wheel.name if wheel else None), (cache / sdist.name if sdist else None), []


def artefact_names(path: Path) -> list[str]:
    """The file names inside a wheel (zip) or an sdist (tar.gz)."""
    if path.suffix == ".whl":
        with zipfile.ZipFile(path) as archive:
            return archive.namelist()
    with tarfile.open(path) as archive:
        return [m.name for m in archive.getmembers() if m.isfile()]


def artefact_problems(path: Path, module: str) -> list[str]:
    """What a built wheel or sdist lacks (LICENSE, py.typed) or must not hold (anything under studies/)."""
    names = artefact_names(path)
    kind = "wheel" if path.suffix == ".whl" else "sdist"
    if kind == "wheel":
        has_license = any(re.fullmatch(r"[^/]+\.dist-info/(licenses/)?LICENSE", n) for n in names)
        has_typed = f"{module}/py.typed" in names
    else:
        has_license = any(re.fullmatch(r"[^/]+/LICENSE", n) for n in names)
        has_typed = any(re.fullmatch(rf"[^/]+/src/{re.escape(module)}/py\.typed", n) for n in names)
    problems = []
    if not has_license:
        problems.append(f"the {kind} {path.name} holds no LICENSE")
    if not has_typed:
        problems.append(f"the {kind} {path.name} holds no {module}/py.typed")
    studies = [n for n in names if "studies" in n.split("/")[:-1]]
    if studies:
        problems.append(f"the {kind} {path.name} holds {len(studies)} file(s) under studies/ (e.g. {studies[0]}); "
                        "studies stay in the repository")
    return problems


def twine_problems(artefacts: list[Path]) -> str | None:
    """``twine check --strict`` on the artefacts: None when it passes, else its output."""
    done = _run([sys.executable, "-m", "twine", "check", "--strict", *map(str, artefacts)])
    return None if done.returncode == 0 else (done.stdout + done.stderr)[-2000:]


def cli_problem(output: subprocess.CompletedProcess, dist: str, module: str, command: str, *,
                cli_installed: bool) -> str | None:
    """Why ``python -m <module> <command>`` (dry-run: extras checked, nothing run) misbehaved in a bare install.

    Accepted: exit 0 when the ``cli`` extra's matplotlib is installed, else exit 2 with exactly one non-empty
    stderr line that names ``pip install "<dist>[...cli...]"`` (the distribution's own name, no path into
    the repository) and no traceback. Exit 2 with that line is accepted too when the command's own extra
    is missing.
    """
    lines = [line for line in output.stderr.splitlines() if line.strip()]
    if output.returncode == 0 and (cli_installed or command not in ("demo", "reproduce")):
        return None
    hint = re.search(rf'pip install "{re.escape(dist)}\[([^\]]+)\]"', lines[0]) if len(lines) == 1 else None
    extras = hint.group(1).split(",") if hint else []
    if (output.returncode == 2 and hint and "Traceback" not in output.stderr + output.stdout
            and (cli_installed or command not in ("demo", "reproduce") or "cli" in extras)):
        return None
    wanted = ("0" if cli_installed else f'2 with one stderr line naming pip install "{dist}[cli]"'
              if command in ("demo", "reproduce") else f'0, or 2 with one stderr line naming pip install "{dist}[...]"')
    return (f"`python -m {module} {command}` in a bare install exits {output.returncode}; expected {wanted}:\n"
            f"{(output.stdout + output.stderr)[-2000:]}")


def pip_sources() -> list[str]:
    """pip's configured package sources (index URLs, find-links) as uv options, so both see one store."""
    done = _run([sys.executable, "-m", "pip", "config", "list"])
    options: dict[str, list[str]] = {"index-url": [], "extra-index-url": [], "find-links": []}
    for line in done.stdout.splitlines() if done.returncode == 0 else []:
        key, _, value = line.partition("=")
        name = key.rsplit(".", 1)[-1]
        if name in options:
            options[name] += [v for v in value.strip().strip("'\"").split() if v not in options[name]]
    for name, variable in (("index-url", "PIP_INDEX_URL"), ("extra-index-url", "PIP_EXTRA_INDEX_URL"),
                           ("find-links", "PIP_FIND_LINKS")):
        options[name] += [v for v in os.environ.get(variable, "").split() if v not in options[name]]
    args = ["--index-strategy", "unsafe-best-match"]  # pip's rule: the best version over every index
    for name, values in options.items():
        for value in values[:1] if name == "index-url" else values:
            args += [f"--{name}", value]
    return args


def installer_command(venv_python: Path, installer: str) -> list[str]:
    """The command that installs into ``venv_python``'s environment (uv when available, else pip).

    Either way nothing is byte-compiled: pip's compilation of torch alone took most of the check.
    """
    uv = shutil.which("uv") or str(Path(sys.executable).parent / "uv")
    if installer == "uv" or (installer == "auto" and Path(uv).exists()):
        return [uv, "pip", "install", "-q", "--python", str(venv_python), *pip_sources()]
    return [sys.executable, "-m", "pip", "--python", str(venv_python), "install", "-q", "--disable-pip-version-check",
            "--no-compile"]


# Run in the fresh venv. Reports which of the CLI extra's modules are importable, imports the module and
# resolves every name of its ``__all__``, then runs ``python -m <module> <command>`` for each command in the
# same process (each interpreter start re-imports numpy/scipy/torch), with ``icml25_shared.cli.run_cli``
# replaced by a dry run: arguments parsed and extras checked as the real frame does, commands not run.
# Prints one JSON line; a command's stdout/stderr as `python -m` would show them, an exception as its traceback.
PROBE = r"""
import contextlib, importlib, importlib.util, io, json, runpy, sys, traceback
module, commands = sys.argv[1], sys.argv[2:]
report = {"present": [n for n in ("matplotlib", "tqdm") if importlib.util.find_spec(n) is not None],
          "import": "", "api": {}, "commands": {}}


def _pulled_by(name):
    # third-party distributions of the bare install whose unconditional requirements name ``name``
    import re
    from importlib import metadata
    found = []
    for dist in metadata.distributions():
        dist_name = (dist.metadata["Name"] or "").lower()
        if dist_name in ("icml25-shared", name):
            continue
        for requirement in dist.requires or []:
            body, _, marker = requirement.partition(";")
            required = re.split(r"[\s\[<>=!~(]", body.strip(), maxsplit=1)[0].lower().replace("_", "-")
            if "extra" not in marker and required == name:
                found.append(dist_name)
                break
    return sorted(found)


report["pulled_by"] = {n: _pulled_by(n) for n in report["present"]}
try:
    import icml25_shared.cli as cli
except ImportError:
    cli = None
if cli is not None:
    real_run_cli = cli.run_cli

    def dry_run_cli(package, *, demo, reproduce, extra_commands=None, **options):
        extras = {name: cli.ExtraCommand(c.help, lambda argv: 0) for name, c in (extra_commands or {}).items()}
        return real_run_cli(package, demo=lambda ctx: None, reproduce=lambda ctx: None, extra_commands=extras,
                            **options)

    cli.run_cli = dry_run_cli
try:
    imported = importlib.import_module(module)
except BaseException:
    report["import"] = traceback.format_exc()
    commands = []
else:
    names = getattr(imported, "__all__", None)
    if names is None:
        report["api"]["__all__"] = "the module defines no __all__"
    for name in names or []:
        try:
            getattr(imported, name)
        except ImportError as error:
            if "pip install" not in str(error):  # a name that needs an extra must say which one
                report["api"][name] = f"{type(error).__name__}: {error}"
        except BaseException as error:
            report["api"][name] = f"{type(error).__name__}: {error}"
for command in commands:
    out, err, code = io.StringIO(), io.StringIO(), 0
    sys.argv = [module, command]
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            runpy.run_module(module, run_name="__main__", alter_sys=True)
        except SystemExit as stop:
            code = stop.code if isinstance(stop.code, int) else (0 if stop.code is None else 1)
            if stop.code is not None and not isinstance(stop.code, int):
                print(stop.code, file=sys.stderr)
        except BaseException:
            code = 1
            traceback.print_exc()
    report["commands"][command] = [code, out.getvalue(), err.getvalue()]
print(json.dumps(report))
"""

# Installed by the ``cli`` extra; a bare install holds them only where the core declares them.
CLI_ONLY = ("matplotlib", "tqdm")


def probe_problems(report: dict, member: Member) -> list[Problem]:
    """What the PROBE's report of a bare install says is wrong with ``member``."""
    problems = []
    init, main = member.src / "__init__.py", member.src / "__main__.py"
    core = {requirement_name(r) for r in tomllib.loads((member.path / "pyproject.toml").read_text())["project"]
            .get("dependencies", [])}
    for name in report.get("present", []):
        # a third-party base dependency that needs it (transformers needs tqdm) makes it part of the core
        if name not in core and not report.get("pulled_by", {}).get(name):
            problems.append(Problem(member.path / "pyproject.toml", 1,
                                    f"the bare install of {member.dist} holds {name}, which only its extras declare "
                                    "and no third-party base dependency requires"))
    if report.get("import"):
        problems.append(Problem(init, 1, f"import {member.module} fails with only its declared dependencies:\n"
                                         f"{report['import'][-2000:]}"))
    for name, error in report.get("api", {}).items():
        problems.append(Problem(init, 1, f"{member.module}.{name} (in __all__) does not resolve in a bare install: "
                                         f"{error[-1000:]}"))
    cli_installed = "matplotlib" in report.get("present", [])
    for command, (code, stdout, stderr) in report.get("commands", {}).items():
        problem = cli_problem(subprocess.CompletedProcess([], code, stdout, stderr), member.dist, member.module,
                              command, cli_installed=cli_installed)
        if problem is not None:
            problems.append(Problem(main, 1, f"{member.dist}: {problem}"))
    return problems


NOT_RUN_MARK = "# Not run by the README test"
DOCUMENTED_TIMEOUT_S = 600


def readme_python_blocks(readme: Path) -> list[str]:
    """The README's ```python blocks in order, without those whose first line is NOT_RUN_MARK."""
    blocks = re.findall(r"^```python\n(.*?)^```", readme.read_text(encoding="utf-8"), re.S | re.M)
    return [block for block in blocks if not block.startswith(NOT_RUN_MARK)]


def documented_install_problems(member: Member, wheel: Path, shared_wheel: Path, folder: Path, installer: str,
                                env: dict[str, str]) -> list[Problem]:
    """In a fresh venv built from the member's documented install line (its wheel with [tool.icml25] install),
    ``python -m <pkg> demo --quick`` and the README's python blocks (in order, one interpreter) must run."""
    extras = ",".join(install_extras(member) or [])
    venv = folder / "venv-documented"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    py = venv / "bin" / "python"
    requirement = f"{member.dist}{f'[{extras}]' if extras else ''} @ {wheel.resolve().as_uri()}"
    wheels = [requirement] if member.module == SHARED_IMPORT else [str(shared_wheel), requirement]
    done = _run([*installer_command(py, installer), "-c", str(CONSTRAINTS), *wheels], env=env)
    line = install_line(member) if member.module != SHARED_IMPORT else f'pip install "./shared[{extras}]"'

    if done.returncode != 0:
        return [Problem(member.path / "pyproject.toml", 1, f"installing `{line}` (as wheels) into a fresh venv "
                                                           f"failed:\n{done.stderr[-2000:]}")]
    problems = []
    run_env = {**env, "MPLBACKEND": "Agg", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    runs = [("demo --quick", [str(py), "-m", member.module, "demo", "--quick", "--out", str(folder / "demo")],
             member.src / "__main__.py")] if (member.src / "__main__.py").is_file() else []
    blocks = readme_python_blocks(member.path / "README.md")
    if blocks:
        script = folder / "readme_examples.py"
        script.write_text("\n\n".join(blocks), encoding="utf-8")
        runs.append(("the README's python blocks", [str(py), str(script)], member.path / "README.md"))
    # The README's commands run from the repository root (`git clone ... && cd icml25`): the temporary folder
    # links packages/ so that paths relative to the root (shipped data under packages/<dist>/) resolve, while
    # whatever the examples write stays in the temporary folder.
    root_view = folder / "packages"
    if not root_view.exists():
        root_view.symlink_to(member.path.parent.resolve(), target_is_directory=True)
    for what, cmd, where in runs:
        try:
            done = subprocess.run(cmd, cwd=folder, env=run_env, capture_output=True, text=True,
                                  timeout=DOCUMENTED_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            problems.append(Problem(where, 1, f"{what} ran over {DOCUMENTED_TIMEOUT_S} s after `{line}`"))
            continue
        if done.returncode != 0:
            problems.append(Problem(where, 1, f"{what} fails after `{line}` (exit {done.returncode}):\n"
                                              f"{(done.stdout + done.stderr)[-2500:]}"))
    return problems


def check_wheels(members: list[Member], selected: set[str] | None = None, *, installer: str = "auto",
                 timings: dict[str, float] | None = None, documented: bool = True) -> list[Problem]:
    """(c) build every selected member once; inspect wheel and sdist; install the bare wheel in a fresh venv;
    check what it holds, import its API and dry-run its commands there (PROBE, probe_problems)."""
    problems: list[Problem] = []
    timings = {} if timings is None else timings

    def timed(name: str, start: float) -> None:
        timings[name] = timings.get(name, 0.0) + time.perf_counter() - start

    with tempfile.TemporaryDirectory(prefix="icml25-wheels-") as tmp_name:
        tmp = Path(tmp_name)
        shared = members[0]
        start = time.perf_counter()
        shared_wheel, shared_sdist, shared_problems = shared_build(shared)
        timed("build", start)
        problems += shared_problems
        for member in members:
            if selected and member.dist not in selected and member.module not in selected:
                continue
            pyproject = member.path / "pyproject.toml"
            start = time.perf_counter()
            if member is shared:
                wheel, sdist = shared_wheel, shared_sdist
            else:
                wheel, sdist, built_problems = build(member, tmp / "dist")
                problems += built_problems
            timed("build", start)
            if wheel is None:
                problems.append(Problem(pyproject, 1, "no wheel to install"))
                continue
            start = time.perf_counter()
            artefacts = [a for a in (wheel, sdist) if a is not None]
            for artefact in artefacts:
                problems += [Problem(pyproject, 1, message) for message in artefact_problems(artefact, member.module)]
            twine = twine_problems(artefacts)
            if twine is not None:
                problems.append(Problem(pyproject, 1, f"twine check --strict fails:\n{twine}"))
            timed("inspect", start)
            start = time.perf_counter()
            venv = tmp / f"venv-{member.dist}"
            subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
            py = venv / "bin" / "python"
            wheels = [str(wheel)] if member is shared else [str(shared_wheel), str(wheel)]
            env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV", "PIP_CONSTRAINT"))}
            done = _run([*installer_command(py, installer), "-c", str(CONSTRAINTS), *wheels], env=env)
            timed("install", start)
            if done.returncode != 0:
                problems.append(Problem(pyproject, 1,
                                        f"installing the wheel into a fresh venv failed:\n{done.stderr[-2000:]}"))
                continue
            # Import from outside the source tree, so only the installed wheel can answer.
            start = time.perf_counter()
            commands = ["demo", "reproduce"] if (member.src / "__main__.py").is_file() else []
            done = _run([str(py), "-c", PROBE, member.module, *commands], cwd=tmp, env={**env, "MPLBACKEND": "Agg"})
            try:
                report = json.loads(done.stdout.strip().splitlines()[-1])
            except (IndexError, ValueError):
                report = {"import": f"the probe failed (exit {done.returncode}):\n{done.stdout}{done.stderr}"}
            problems += probe_problems(report, member)
            if documented and shared_wheel is not None:
                folder = tmp / f"documented-{member.dist}"
                folder.mkdir()
                problems += documented_install_problems(member, wheel, shared_wheel, folder, installer, env)
                shutil.rmtree(folder, ignore_errors=True)
            timed("run", start)
            shutil.rmtree(venv, ignore_errors=True)
    return problems


# --- figures -------------------------------------------------------------------------------------------

# Run in a subprocess per package and command: every figure the command saves is checked by
# icml25_shared.testing.figure_problems just before it is written (Figure.savefig patched in-process), and
# the frame of the package's own source that saved it is recorded. Writes one JSON report.
FIGURE_RUNNER = r"""
import json, os, runpy, sys, time, traceback
import matplotlib
matplotlib.use("Agg")
from matplotlib.figure import Figure
from icml25_shared.testing import figure_problems
module, command, src, out, report_path, stored, *options = sys.argv[1:]
src = os.path.realpath(src)
figures = []
original = Figure.savefig


def check(fig, name, where):
    try:
        problems = figure_problems(fig)
    except Exception as error:  # a figure that cannot be drawn is a finding too
        problems = [f"drawing it raised {type(error).__name__}: {error}"]
    size = [round(float(v), 2) for v in fig.get_size_inches()]
    figures.append({"file": name, "where": where, "size": size, "problems": problems})


def checked(self, fname, *args, **kwargs):
    frames = [f for f in traceback.extract_stack()[:-1] if os.path.realpath(f.filename).startswith(src + os.sep)]
    where = [os.path.realpath(frames[-1].filename), frames[-1].lineno] if frames else ["", 0]
    check(self, os.path.basename(str(fname)), where)
    return original(self, fname, *args, **kwargs)


Figure.savefig = checked
sys.argv = [module, command, "--out", out, *options]
start, code, error = time.perf_counter(), 0, ""
try:
    runpy.run_module(module, run_name="__main__", alter_sys=True)
except SystemExit as stop:
    code = stop.code if isinstance(stop.code, int) else (0 if stop.code is None else 1)
except BaseException:
    code, error = 1, traceback.format_exc()
render_errors = []
for stored_path, function in json.loads(stored):  # figures drawn from stored results by <module>.experiments
    import importlib, inspect
    try:
        render = getattr(importlib.import_module(module + ".experiments"), function)
        where = [os.path.realpath(inspect.getsourcefile(render)), inspect.getsourcelines(render)[1]]
    except BaseException:
        render_errors.append([stored_path, function, ["", 0], traceback.format_exc()])
        continue
    try:
        with open(stored_path) as handle:
            fig = render(json.load(handle))
        check(fig, function + "(" + os.path.relpath(stored_path, os.path.dirname(os.path.dirname(src))) + ")", where)
    except BaseException:
        render_errors.append([stored_path, function, where, traceback.format_exc()])
with open(report_path, "w") as handle:
    json.dump({"code": code, "error": error[-3000:], "seconds": time.perf_counter() - start,
               "figures": figures, "render_errors": render_errors}, handle)
"""
FIGURE_TIMEOUT_S = 600  # per command: a loaded 2-core machine runs some quick demos for minutes
# Commands whose every figure the check renders: each package's `demo --quick`. `reproduce --quick` of most
# packages trains for minutes (crossclass-at's over 5 minutes on 2 cores); `--reproduce` adds it.
FIGURE_COMMANDS = (("demo", "--quick"),)


@dataclass
class FigureRun:
    """What one command of one member saved."""

    member: Member
    command: str
    code: int
    seconds: float
    error: str
    figures: list[dict]
    render_errors: list[list] = field(default_factory=list)  # [stored file, function, [path, line], traceback]


def stored_figures(member: Member) -> list[tuple[Path, str]]:
    """``[tool.icml25.stored-figures]`` of the member's pyproject: (stored JSON file, function of
    ``<module>.experiments`` that draws a figure from that JSON alone). The check draws each, so a full-size
    figure is checked without rerunning the experiment that stored it."""
    config = tomllib.loads((member.path / "pyproject.toml").read_text())
    declared = config.get("tool", {}).get("icml25", {}).get("stored-figures", {})
    # a result not stored yet (a new package) has no figure to check
    return [(member.path / path, str(function)) for path, function in declared.items() if (member.path / path).is_file()]


def run_figure_command(member: Member, command: tuple[str, ...], folder: Path, *,
                       timeout: float = FIGURE_TIMEOUT_S) -> FigureRun:
    """Run ``python -m <module> <command...> --out <folder>`` with FIGURE_RUNNER; collect its report. After
    ``demo``, the same process draws the member's stored figures (:func:`stored_figures`)."""
    report = folder / "figures.json"
    name, *options = command
    env = {**os.environ, "MPLBACKEND": "Agg", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
           "OPENBLAS_NUM_THREADS": "1"}
    stored = [[str(path), function] for path, function in stored_figures(member)] if name == "demo" else []
    cmd = [sys.executable, "-c", FIGURE_RUNNER, member.module, name, str(member.src), str(folder / "out"),
           str(report), json.dumps(stored), *options]
    start = time.perf_counter()
    try:
        done = subprocess.run(cmd, cwd=folder, env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return FigureRun(member, " ".join(command), 124, time.perf_counter() - start,
                         f"ran over {timeout:.0f} s", [])
    if not report.exists():
        return FigureRun(member, " ".join(command), done.returncode or 1, time.perf_counter() - start,
                         (done.stdout + done.stderr)[-3000:], [])
    data = json.loads(report.read_text())
    error = data["error"] or ("" if data["code"] == 0 else (done.stdout + done.stderr)[-3000:])
    return FigureRun(member, " ".join(command), data["code"], data["seconds"], error, data["figures"],
                     data.get("render_errors", []))


def figure_run_problems(run: FigureRun) -> list[Problem]:
    """One Problem per unreadable figure (at the line of the package that saved it), or for a failed run."""
    main = run.member.src / "__main__.py"
    problems = []
    for stored, function, (path, line), trace in run.render_errors:
        problems.append(Problem(Path(path) if path else run.member.path / "pyproject.toml", line or 1,
                                f"{function}({stored}) (declared in [tool.icml25.stored-figures]) failed:\n{trace}"))
    if run.code != 0:
        return problems + [Problem(main, 1, f"`{run.command}` failed (exit {run.code}), so its figures went "
                                            f"unchecked:\n{run.error}")]
    for figure in run.figures:
        path, line = figure["where"]
        where = Path(path) if path else main
        size = " x ".join(f"{v:g}" for v in figure["size"])
        problems += [Problem(where, line or 1, f"`{run.command}` saves {figure['file']} ({size} in): {message}")
                     for message in figure["problems"]]
    return problems


def check_figures(members: list[Member], selected: set[str] | None = None, *, jobs: int = 2,
                  commands: tuple[tuple[str, ...], ...] = FIGURE_COMMANDS,
                  runs: list[FigureRun] | None = None) -> list[Problem]:
    """Every figure each selected package's commands save: no overlapping text, every axis labelled
    (:func:`icml25_shared.testing.figure_problems`, at the figure's own size). ``runs`` collects the runs."""
    from concurrent.futures import ThreadPoolExecutor

    chosen = [m for m in members[1:] if (m.src / "__main__.py").is_file()
              and (not selected or {m.dist, m.module} & selected)]
    runs = [] if runs is None else runs
    with tempfile.TemporaryDirectory(prefix="icml25-figures-") as tmp_name:
        tasks = []
        for member in chosen:
            for command in commands:
                folder = Path(tmp_name) / f"{member.dist}-{command[0]}"
                folder.mkdir()
                tasks.append((member, command, folder))
        with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
            runs += pool.map(lambda task: run_figure_command(*task), tasks)
    return [problem for run in runs for problem in figure_run_problems(run)]


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("check", choices=["wheels", "shape", "readme", "figures"])
    parser.add_argument("packages", nargs="*", help="limit 'wheels' to these distributions")
    parser.add_argument("--root", type=Path, default=ROOT, help="workspace root (for tests)")
    parser.add_argument("--bare-only", action="store_true",
                        help="wheels: skip the venv from the documented install line (demo --quick, README blocks)")
    parser.add_argument("--write", action="store_true", help="readme: render the root table's install column")
    parser.add_argument("--reproduce", action="store_true", help="figures: run `reproduce --quick` too (minutes)")
    parser.add_argument("--jobs", type=int, default=2, help="figures: commands run at once")
    parser.add_argument("--installer", choices=["auto", "uv", "pip"], default="auto",
                        help="wheels: what installs into the fresh venvs (auto: uv when present, else pip)")
    args = parser.parse_args(argv)
    members = workspace(args.root)
    if args.check == "shape":
        problems = check_shape(members, args.root)
    elif args.check == "readme":
        if args.write and write_install_cells(members, args.root):
            print("readme: rendered the package table's install column from [tool.icml25] install")
        problems = [p for m in members[1:] for p in install_problems(m, args.root)]
    elif args.check == "figures":
        runs: list[FigureRun] = []
        commands = FIGURE_COMMANDS + ((("reproduce", "--quick"),) if args.reproduce else ())
        problems = check_figures(members, set(args.packages) or None, jobs=args.jobs, commands=commands, runs=runs)
        print("figures: " + ", ".join(f"{r.member.dist} {r.command.split()[0]} {len(r.figures)} in {r.seconds:.0f}s"
                                      for r in runs))
    else:
        timings: dict[str, float] = {}
        problems = check_wheels(members, set(args.packages) or None, installer=args.installer, timings=timings,
                                documented=not args.bare_only)
        print("wheels: " + ", ".join(f"{name} {seconds:.1f}s" for name, seconds in timings.items()))
    for problem in problems:
        print(problem)
    names = set(args.packages)
    checked = [m for m in members if args.check not in ("wheels", "figures") or not names or {m.dist, m.module} & names]
    print(f"{args.check}: {len(checked)} member(s) checked, {len(problems)} problem(s)")
    return 1 if problems else 0

if __name__ == "__main__":
    raise SystemExit(main())
