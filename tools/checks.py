"""Structural checks of the monorepo, used by CI.

    python tools/checks.py imports            # (a) every src import is stdlib/own/icml25_shared/declared
                                              # (b) no package imports another package (src, tests, benchmarks)
    python tools/checks.py wheels [PKG ...]   # (c) hatch builds wheel + sdist; a fresh venv with the
                                              #     package's wheel, the shared wheel and their declared
                                              #     dependencies imports the package

Each failure is printed as ``path:line: message``; the exit code is 1 when anything failed.
"""

from __future__ import annotations

import argparse
import ast
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - CI's dev environment is 3.11
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[1]
CONSTRAINTS = ROOT / "tools" / "constraints.txt"
SHARED_IMPORT = "icml25_shared"

# Distributions whose import name is not their normalised distribution name, for when the
# distribution is not installed in the checking environment (installed ones are read from metadata).
KNOWN_IMPORT_NAMES = {
    "scikit-learn": {"sklearn"},
    "pyyaml": {"yaml"},
    "pillow": {"PIL"},
    "opencv-python": {"cv2"},
    "opencv-python-headless": {"cv2"},
    "beautifulsoup4": {"bs4"},
    "python-dateutil": {"dateutil"},
    "protobuf": {"google"},
    "torch": {"torch", "torchgen", "functorch"},
    "rdkit": {"rdkit"},
    "pynacl": {"nacl"},
}


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


def import_names(dist: str) -> set[str]:
    """Top-level import names a distribution provides (installed metadata, else known names, else a guess)."""
    dist = normalise(dist)
    names = set(KNOWN_IMPORT_NAMES.get(dist, ()))
    try:
        files = metadata.distribution(dist).files or []
    except metadata.PackageNotFoundError:
        files = []
    for file in files:
        parts = Path(str(file)).parts
        if not parts or parts[0].endswith((".dist-info", ".data")) or parts[0] in ("..", "__pycache__"):
            continue
        top = parts[0]
        if top.endswith(".py"):
            names.add(top[:-3])
        elif len(parts) > 1 and not top.endswith(".pth"):
            names.add(top)
        elif top.endswith((".so", ".pyd")):
            names.add(top.split(".")[0])
    names.add(dist.replace("-", "_"))
    return names


def imports_of(path: Path) -> list[tuple[str, int]]:
    """Absolute top-level imports of a Python file, with line numbers (relative imports are own)."""
    tree = ast.parse(path.read_text(), filename=str(path))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(alias.name.split(".")[0], node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.append((node.module.split(".")[0], node.lineno))
    return found


def python_files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*.py") if "__pycache__" not in p.parts) if folder.exists() else []


def check_imports(members: list[Member]) -> list[Problem]:
    """(a) undeclared imports in src and (b) imports of a sibling package anywhere in a package."""
    problems: list[Problem] = []
    module_of = {m.module: m for m in members}
    stdlib = set(sys.stdlib_module_names) | {"__future__"}
    for member in members:
        declared = {requirement_name(r) for r in member.dependencies}
        # A workspace member required with extras (icml25-shared[cli]) brings those extras' deps.
        for requirement in member.dependencies:
            name, extras = parse_requirement(requirement)
            provider = next((m for m in members if normalise(m.dist) == name), None)
            for extra in extras if provider is not None else ():
                declared |= {requirement_name(r) for r in provider.extras.get(extra, ())}
        allowed = stdlib | {member.module}
        for dist in declared:
            allowed |= import_names(dist)
        for folder in (member.src, member.path / "tests", member.path / "benchmarks"):
            in_src = folder == member.src
            for path in python_files(folder):
                for name, line in imports_of(path):
                    sibling = module_of.get(name)
                    if sibling is not None and sibling is not member and name != SHARED_IMPORT:
                        problems.append(Problem(path, line, f"imports sibling package {name!r} ({sibling.dist}); "
                                                            "packages never import each other"))
                    elif name == SHARED_IMPORT and member.module != SHARED_IMPORT and "icml25-shared" not in declared:
                        problems.append(Problem(path, line, "imports icml25_shared but does not declare icml25-shared"))
                    elif in_src and name not in allowed and name != SHARED_IMPORT:
                        problems.append(Problem(path, line, f"imports {name!r}, which is neither stdlib, "
                                                            f"{member.module}, nor a declared dependency of {member.dist}"))
    return problems


def _run(cmd: list[str], *, cwd: Path | None = None, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True)


def build(member: Member, out: Path) -> tuple[Path | None, list[Problem]]:
    """``hatch build`` the member into ``out``; return its wheel (or None) and any problems."""
    hatch = shutil.which("hatch") or str(Path(sys.executable).parent / "hatch")
    done = _run([hatch, "build", "-t", "wheel", "-t", "sdist", str(out)], cwd=member.path)
    if done.returncode != 0:
        return None, [Problem(member.path / "pyproject.toml", 1, f"hatch build failed:\n{done.stderr[-2000:]}")]
    stem = member.dist.replace("-", "_")
    wheels, sdists = sorted(out.glob(f"{stem}-*.whl")), sorted(out.glob(f"{stem}-*.tar.gz"))
    problems = []
    if not wheels:
        problems.append(Problem(member.path / "pyproject.toml", 1, "hatch build produced no wheel"))
    if not sdists:
        problems.append(Problem(member.path / "pyproject.toml", 1, "hatch build produced no sdist"))
    return (wheels[-1] if wheels else None), problems


def check_wheels(members: list[Member], selected: set[str] | None = None) -> list[Problem]:
    """(c) build every selected member and import it from a fresh venv holding only declared deps."""
    problems: list[Problem] = []
    with tempfile.TemporaryDirectory(prefix="icml25-wheels-") as tmp:
        tmp = Path(tmp)
        shared = members[0]
        shared_wheel, shared_problems = build(shared, tmp / "dist")
        problems += shared_problems
        for member in members:
            if selected and member.dist not in selected and member.module not in selected:
                continue
            wheel = shared_wheel if member is shared else build(member, tmp / "dist")[0]
            if wheel is None:
                problems.append(Problem(member.path / "pyproject.toml", 1, "no wheel to install"))
                continue
            venv = tmp / f"venv-{member.dist}"
            subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
            py = venv / "bin" / "python"
            wheels = [str(wheel)] if member is shared else [str(shared_wheel), str(wheel)]
            env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV"))}
            done = _run([str(py), "-m", "pip", "install", "-q", "--disable-pip-version-check",
                         "-c", str(CONSTRAINTS), *wheels], env=env)
            if done.returncode != 0:
                problems.append(Problem(member.path / "pyproject.toml", 1,
                                        f"installing the wheel into a fresh venv failed:\n{done.stderr[-2000:]}"))
                continue
            # Import from outside the source tree, so only the installed wheel can answer.
            probe = f"import {member.module}"
            done = _run([str(py), "-c", probe], cwd=tmp, env=env)
            if done.returncode != 0:
                problems.append(Problem(member.src / "__init__.py", 1,
                                        f"import {member.module} fails with only its declared dependencies:\n"
                                        f"{done.stderr[-2000:]}"))
            shutil.rmtree(venv, ignore_errors=True)
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("check", choices=["imports", "wheels"])
    parser.add_argument("packages", nargs="*", help="limit 'wheels' to these distributions")
    parser.add_argument("--root", type=Path, default=ROOT, help="workspace root (for tests)")
    args = parser.parse_args(argv)
    members = workspace(args.root)
    if args.check == "imports":
        problems = check_imports(members)
    else:
        problems = check_wheels(members, set(args.packages) or None)
    for problem in problems:
        print(problem)
    names = set(args.packages)
    checked = [m for m in members if args.check == "imports" or not names or {m.dist, m.module} & names]
    print(f"{args.check}: {len(checked)} member(s) checked, {len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
