"""One entry point for the whole monorepo, needing only Python >= 3.10 with pip and venv.

    python tools/dev.py test    # static checks, every suite (tests + doctests), every demo figure, wheels, the
                                # documentation site; per step its seconds and its 10 slowest tests
    python tools/dev.py demo    # every package's `python -m <pkg> demo`; writes out/REPORT.md
    python tools/dev.py docs    # the documentation site, served on 127.0.0.1:8000
    python tools/dev.py setup   # only create (or refresh) the environment

These create (or reuse) the virtual environment `.venv` and install every member editable with the pinned
constraints in tools/constraints.txt; a stamp of the pyprojects skips reinstalling when nothing changed.
`--packages a,b` limits the run, `--jobs N` runs N steps at once. Nothing is installed outside `.venv`:
the browser check of the site needs Chromium and skips with one line without it, unless
`--install-browser` lets `test` unpack a headless Chromium from the npm registry into `.venv/chromium`
(about 70 MB downloaded, 215 MB on disk; needs node and npm), or else install Debian's chromium with apt (root).

The definitions that `test`, hatch (hatch.toml) and CI share, run with the current interpreter (no set-up):

    python tools/dev.py pytest [SUITE ...] [--triton] [-- PYTEST-ARGS]
        # the tests of each suite: its tests/ folder and the doctests of its src/ (SUITE: tools, shared, a
        # distribution or import name, integration; none: all). --triton: the Triton-marked tests instead,
        # under TRITON_INTERPRET=1
    python tools/dev.py static  # ruff, import-linter, deptry and mypy per member, structural checks
    python tools/dev.py imports # import-linter: packages are independent, shared imports no package
    python tools/dev.py mypy [MEMBER ...]    # `mypy <member>/src` for each member (one shared cache)
    python tools/dev.py deptry [MEMBER ...]  # deptry over each member's src/ ([tool.icml25.deptry] in pyproject)
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import os
import re
import subprocess
import sys
import tempfile
import time
import venv
import xml.etree.ElementTree as ET
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - the dev environment is 3.11
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[1]
CONSTRAINTS = ROOT / "tools" / "constraints.txt"
DEV_REQUIREMENTS = ROOT / "tools" / "requirements-dev.txt"
DOCS_REQUIREMENTS = ROOT / "tools" / "requirements-docs.txt"
OVERRIDES = ROOT / "tools" / "overrides.txt"
SHARED_EXTRAS = "cli,sklearn,test"
DEMO_TIMEOUT_S = 300


@dataclass
class Step:
    """One subprocess of a run, with what it printed and the tests it counted."""

    name: str
    cmd: list[str]
    env: dict[str, str] = field(default_factory=dict)
    allow_no_tests: bool = False
    timeout_s: float | None = None
    returncode: int | None = None
    output: str = ""
    seconds: float = 0.0
    counts: dict[str, int] = field(default_factory=dict)
    slowest: list[tuple[float, str]] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.returncode == 0 or (self.allow_no_tests and self.returncode == 5)


def members() -> list[tuple[str, str, Path]]:
    """(distribution, import name, folder) of every package under packages/, sorted."""
    sys.path.insert(0, str(ROOT / "tools"))
    from checks import workspace

    return [(m.dist, m.module, m.path) for m in workspace(ROOT)[1:]]


def venv_python(env_dir: Path) -> Path:
    return env_dir / ("Scripts/python.exe" if os.name == "nt" else "bin/python")


def ensure_environment(env_dir: Path, packages: list[tuple[str, str, Path]], *, reinstall: bool) -> Path:
    """Create the venv if needed and install every member editable (skipped when the stamp matches)."""
    if sys.version_info < (3, 10):  # noqa: UP036 - this script may be started by an older python3
        raise SystemExit(f"Python >= 3.10 is required, this is {sys.version.split()[0]}")
    python = venv_python(env_dir)
    if not python.exists():
        print(f"creating {env_dir}", flush=True)
        venv.EnvBuilder(with_pip=True).create(env_dir)
    specs = [f"{ROOT / 'shared'}[{SHARED_EXTRAS}]"] + [f"{path}[test]" for _, _, path in packages]
    digest = hashlib.sha256()
    for path in [CONSTRAINTS, DEV_REQUIREMENTS, OVERRIDES, ROOT / "shared" / "pyproject.toml",
                 *(p / "pyproject.toml" for _, _, p in packages)]:
        digest.update(path.read_bytes())
    digest.update(" ".join(specs).encode())
    stamp = env_dir / f".installed-{digest.hexdigest()[:16]}"
    if stamp.exists() and not reinstall:
        return python
    with _install_lock(env_dir):  # two dev.py runs at once must not pip-install into one venv together
        if stamp.exists() and not reinstall:
            return python
        _install_members(python, specs)
        for old in env_dir.glob(".installed-*"):
            old.unlink()
        stamp.touch()
    return python


@contextlib.contextmanager
def _install_lock(env_dir: Path):
    """Hold an exclusive lock on ``env_dir/.install.lock`` (no-op where fcntl is missing)."""
    try:
        import fcntl
    except ImportError:  # Windows: no concurrent-run protection
        yield
        return
    with open(env_dir / ".install.lock", "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _install_members(python: Path, specs: list[str]) -> None:
    """The development tools with pip, then every member editable with uv (its overrides pick CPU builds)."""
    print("installing the workspace into the environment (first run: about 5 minutes and 3 GB with warm download caches, longer when downloading)", flush=True)
    env = dict(os.environ, PIP_CONSTRAINT="")  # our constraints file, not a stray global one
    pip = [str(python), "-m", "pip", "install", "--disable-pip-version-check", "-q", "-c", str(CONSTRAINTS)]
    if subprocess.run([*pip, "-r", str(DEV_REQUIREMENTS)], env=env).returncode != 0:
        raise SystemExit("installing the development tools failed")
    editable = [arg for spec in specs for arg in ("-e", spec)]
    uv = python.parent / ("uv.exe" if os.name == "nt" else "uv")
    if uv.exists():
        sys.path.insert(0, str(ROOT / "tools"))
        from checks import pip_sources

        cmd = [str(uv), "pip", "install", "-q", "--python", str(python), *pip_sources(), "-c", str(CONSTRAINTS),
               "--override", str(OVERRIDES), *editable]
    else:  # no uv: pip, which cannot override, installs the declared (full) builds
        cmd = [*pip, *editable]
    done = subprocess.run(cmd, env=env)
    if done.returncode != 0:
        raise SystemExit(f"installing the environment failed (exit {done.returncode})")


def ensure_docs_tools(python: Path, env_dir: Path) -> None:
    """Install the documentation site's tools (tools/requirements-docs.txt) unless their stamp matches."""
    stamp = env_dir / f".docs-{hashlib.sha256(DOCS_REQUIREMENTS.read_bytes()).hexdigest()[:16]}"
    if stamp.exists():
        return
    print("installing the documentation tools into the environment", flush=True)
    done = subprocess.run([str(python), "-m", "pip", "install", "--disable-pip-version-check", "-q",
                           "-c", str(CONSTRAINTS), "-r", str(DOCS_REQUIREMENTS)], env=dict(os.environ, PIP_CONSTRAINT=""))
    if done.returncode != 0:
        raise SystemExit(f"installing the documentation tools failed (exit {done.returncode})")
    for old in env_dir.glob(".docs-*"):
        old.unlink()
    stamp.touch()


def suites(packages: list[tuple[str, str, Path]]) -> dict[str, tuple[Path, Path | None]]:
    """Every suite by name: (tests folder, src folder whose doctests run with them, or None)."""
    found: dict[str, tuple[Path, Path | None]] = {"tools": (ROOT / "tools" / "tests", None),
                                                  "shared": (ROOT / "shared" / "tests", ROOT / "shared" / "src")}
    found.update({dist: (path / "tests", path / "src") for dist, _, path in packages})
    found["integration"] = (ROOT / "tests" / "integration", None)
    return found


def pytest_command(python: Path | str, tests: Path, src: Path | None, *, triton: bool) -> tuple[list[str], dict[str, str]]:
    """The one definition of a suite's test run: (command, extra environment).

    Not triton: the suite's tests/ and, with ``src``, the doctests of its src/ (``--doctest-modules``): merged
    into one run they cost ~0.5 s of CPU, a step of their own ~2 s. The root config's
    ``--import-mode=importlib`` imports src modules under their real names from the editable install, so a
    doctest runs in the same module object that the tests import. Triton: the Triton-marked tests under
    ``TRITON_INTERPRET=1`` (the CPU interpreter). ``scale``-marked tests (deployment-size runs of minutes)
    are left to ``pytest -m scale``.
    """
    cmd = [str(python), "-m", "pytest", str(tests)]
    if src is not None and not triton:
        cmd += [str(src), "--doctest-modules"]
    cmd += ["-q", "-p", "no:cacheprovider", "-m", "triton" if triton else "not triton and not scale"]
    return cmd, ({"TRITON_INTERPRET": "1"} if triton else {})


def pytest_step(python: Path, name: str, tests: Path, junit_dir: Path, *, triton: bool,
                src: Path | None = None) -> Step:
    """A gate step running :func:`pytest_command`, with a junit report for the counts and slowest tests."""
    junit = junit_dir / (re.sub(r"[^A-Za-z0-9_.-]+", "_", name).strip("_") + ".xml")
    cmd, env = pytest_command(python, tests, src, triton=triton)
    return Step(name=name, cmd=[*cmd, f"--junitxml={junit}"], env=env, allow_no_tests=True)


def has_triton_tests(folder: Path) -> bool:
    """Whether any test file in ``folder`` carries the triton marker (saves a collection pass)."""
    return any("mark.triton" in p.read_text(errors="ignore") for p in folder.rglob("*.py"))


def junit_counts(path: Path) -> dict[str, int]:
    if not path.exists():
        return {}
    root = ET.parse(path).getroot()
    suites = [root] if root.tag == "testsuite" else list(root)
    total = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    for suite in suites:
        for key in total:
            total[key] += int(suite.get(key, 0))
    return total


def slowest_tests(path: Path, n: int = 10) -> list[tuple[float, str]]:
    """The ``n`` slowest test cases of a junit XML report: (seconds, "classname::name"), slowest first."""
    if not path.exists():
        return []
    cases = []
    for case in ET.parse(path).getroot().iter("testcase"):
        try:
            seconds = float(case.get("time", 0) or 0)
        except ValueError:
            continue
        cases.append((seconds, f"{case.get('classname', '')}::{case.get('name', '')}"))
    return sorted(cases, key=lambda c: (-c[0], c[1]))[:n]


def run_step(step: Step, *, single_thread: bool) -> Step:
    env = dict(os.environ, **step.env)
    env.setdefault("MPLBACKEND", "Agg")
    if single_thread:  # two steps share two cores: one thread each
        env.update(OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
    start = time.perf_counter()
    try:
        done = subprocess.run(step.cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=step.timeout_s)
        step.returncode, step.output = done.returncode, done.stdout + done.stderr
    except subprocess.TimeoutExpired as err:
        out = (err.stdout or b"").decode() if isinstance(err.stdout, bytes) else (err.stdout or "")
        step.returncode, step.output = 124, out + f"\ntimed out after {step.timeout_s}s"
    step.seconds = time.perf_counter() - start
    junit = next((a.split("=", 1)[1] for a in step.cmd if a.startswith("--junitxml=")), None)
    if junit:
        step.counts = junit_counts(Path(junit))
        step.slowest = slowest_tests(Path(junit))
    return step


def run_steps(steps: list[Step], jobs: int) -> list[Step]:
    """Run steps (at most ``jobs`` at once), printing each one's output as it finishes."""

    def report(step: Step) -> Step:
        status = "ok" if step.ok else f"FAILED (exit {step.returncode})"
        lines = [f"--- {step.name}: {status} in {step.seconds:.0f}s"]
        if not step.ok or os.environ.get("ICML25_VERBOSE"):
            lines.append(step.output.rstrip())
        else:
            tail = [line for line in step.output.strip().splitlines() if line.strip()][-1:]
            lines += [f"    {line}" for line in tail]
        if step.slowest:
            lines.append(f"    slowest {len(step.slowest)}:")
            lines += [f"      {seconds:6.2f}s {name}" for seconds, name in step.slowest]
        print("\n".join(lines), flush=True)  # one print: steps finishing together do not interleave
        return step

    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        futures = [pool.submit(lambda s: report(run_step(s, single_thread=jobs > 1)), s) for s in steps]
        return [f.result() for f in futures]


def static_steps(python: Path | str, names: list[str] | None = None) -> list[Step]:
    """The checks that read the code without running its tests (``dev.py static``, the gate's first steps);
    with ``names``, deptry and mypy check only those members (and shared)."""
    python = str(python)
    chosen = ["shared", *names] if names else []
    return [
        Step("ruff", [python, "-m", "ruff", "check", "shared", "packages", "tools", "tests", "conftest.py"]),
        # import-linter: no package imports another, shared imports no package
        Step("import-linter", [python, str(ROOT / "tools" / "dev.py"), "imports"]),
        Step("deptry", [python, str(ROOT / "tools" / "dev.py"), "deptry", *chosen]),
        Step("mypy", [python, str(ROOT / "tools" / "dev.py"), "mypy", *chosen]),
        # README sections, process words, release files, extras, [project.urls], the parameter-contract test
        Step("checks: shape", [python, str(ROOT / "tools" / "checks.py"), "shape"]),
    ]


def selected_members(names: list[str]) -> list[tuple[str, str, Path]]:
    """(distribution, import name, folder) of shared and every package, or of those ``names`` names."""
    everything = [("icml25-shared", "icml25_shared", ROOT / "shared"), *members()]
    wanted = set(names)
    unknown = wanted - {d for d, _, _ in everything} - {m for _, m, _ in everything} - {"shared", "tools"}
    if unknown:
        raise SystemExit(f"unknown members {sorted(unknown)}; known: {[d for d, _, _ in everything]}")
    return [m for m in everything if not wanted or wanted & {m[0], m[1]} or (m[1] == "icml25_shared" and "shared" in wanted)]


def _report(name: str, done: subprocess.CompletedProcess) -> bool:
    lines = [line for line in (done.stdout + done.stderr).strip().splitlines()
             if line.strip() and not line.startswith("For more information")]
    print(f"{name}: {'ok' if done.returncode == 0 else 'FAILED'}: {lines[-1] if lines else ''}", flush=True)
    if done.returncode != 0:
        print("\n".join(f"    {line}" for line in lines[:-1][-200:]), flush=True)
    return done.returncode == 0


def command_mypy(names: list[str]) -> int:
    """``mypy <member>/src`` for each member (and ``mypy tools``), one after the other so the cache is shared."""
    targets = [path / "src" for _, _, path in selected_members(names)]
    if not names or "tools" in names:
        targets.append(ROOT / "tools")
    failed = [t for t in targets if not _report(f"mypy {t.relative_to(ROOT)}", subprocess.run(
        [sys.executable, "-m", "mypy", str(t.relative_to(ROOT))], cwd=ROOT, capture_output=True, text=True))]
    print(f"mypy: {len(targets)} target(s), {len(failed)} with errors")
    return 1 if failed else 0


def importlinter_config(root: Path = ROOT) -> str:
    """import-linter's contracts over the members under ``root``, generated so that a new package is covered."""
    sys.path.insert(0, str(ROOT / "tools"))
    from checks import workspace

    shared, *packages = [m.module for m in workspace(root)]
    indent = "\n    "
    return (f"[importlinter]\nroot_packages ={indent}{indent.join([shared, *packages])}\n\n"
            f"[importlinter:contract:independent]\nname = packages are independent\ntype = independence\n"
            f"modules ={indent}{indent.join(packages)}\n\n"
            f"[importlinter:contract:shared]\nname = shared imports no package\ntype = forbidden\n"
            f"source_modules ={indent}{shared}\nforbidden_modules ={indent}{indent.join(packages)}\n")


def command_imports(root: Path = ROOT) -> int:
    """``lint-imports`` with :func:`importlinter_config` over the source tree (every member's src/ on the path)."""
    sys.path.insert(0, str(ROOT / "tools"))
    from checks import workspace

    lint = Path(sys.executable).parent / "lint-imports"
    with tempfile.TemporaryDirectory(prefix="icml25-importlinter-") as folder:
        config = Path(folder) / "importlinter.ini"
        config.write_text(importlinter_config(root))
        path = os.pathsep.join(str(m.path / "src") for m in workspace(root))
        env = dict(os.environ, PYTHONPATH=path + os.pathsep + os.environ.get("PYTHONPATH", ""))
        return subprocess.call([str(lint) if lint.exists() else "lint-imports", "--config", str(config),
                                "--no-cache"], cwd=root, env=env)


def deptry_command(dist: str, module: str, path: Path) -> list[str]:
    """deptry over ``path``/src with the member's pyproject, the ``test`` extra as its development group and
    the ignores of ``[tool.icml25.deptry]`` in the root pyproject (each with its reason there)."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["icml25"]["deptry"]
    ignores = {"DEP003": ["matplotlib", "tqdm"]}  # the cli extra is icml25-shared[cli] by design
    for rule, names in config.get("ignore", {}).get(dist, {}).items():
        ignores[rule] = ignores.get(rule, []) + names
    name_map = ",".join(f"{k}={v}" for k, v in config.get("package-module-name-map", {}).items())
    return [sys.executable, "-m", "deptry", str((path / "src").relative_to(ROOT)), "--no-ansi",
            "--config", str((path / "pyproject.toml").relative_to(ROOT)), "--known-first-party", module,
            "--optional-dependencies-dev-groups", "test", "--package-module-name-map", name_map,
            "--per-rule-ignores", ",".join(f"{rule}={'|'.join(names)}" for rule, names in ignores.items())]


def command_deptry(names: list[str]) -> int:
    chosen = selected_members(names)
    failed = [dist for dist, module, path in chosen if not _report(f"deptry {dist}", subprocess.run(
        deptry_command(dist, module, path), cwd=ROOT, capture_output=True, text=True))]
    print(f"deptry: {len(chosen)} member(s), {len(failed)} with problems")
    return 1 if failed else 0


def command_pytest(names: list[str], *, triton: bool, extra: list[str]) -> int:
    """Run the suites' tests with this interpreter (hatch and CI call this); the worst exit code wins."""
    everything = suites(members())
    modules = {module: dist for dist, module, _ in members()}
    chosen = [modules.get(n, n) for n in names] or list(everything)
    unknown = [n for n in chosen if n not in everything]
    if unknown:
        raise SystemExit(f"unknown suites {unknown}; known: {list(everything)}")
    worst = 0
    for name in chosen:
        tests, src = everything[name]
        if triton and not has_triton_tests(tests):
            continue
        cmd, env = pytest_command(sys.executable, tests, src, triton=triton)
        print(f"--- {name}: {' '.join(cmd[1:] + extra)}", flush=True)
        code = subprocess.call(cmd + extra, cwd=ROOT, env=dict(os.environ, **env))
        worst = max(worst, 0 if code == 5 else code)  # 5: nothing collected (a suite without doctests)
    return worst


def command_test(python: Path, packages: list[tuple[str, str, Path]], args: argparse.Namespace) -> int:
    junit_dir = Path(tempfile.mkdtemp(prefix="icml25-junit-"))
    tools = [str(python), str(ROOT / "tools" / "checks.py")]
    first = static_steps(python, [dist for dist, _, _ in packages] if args.packages else None)
    tests = []
    for name, (folder, src) in suites(packages).items():
        label = f"tests: {name}" + (" (+ doctests)" if src is not None else "")
        tests.append(pytest_step(python, label, folder, junit_dir, triton=False, src=src))
        if has_triton_tests(folder):
            tests.append(pytest_step(python, f"tests: {name} (triton, interpreted)", folder, junit_dir, triton=True))
    # shared's artefacts too (LICENSE, py.typed, twine); each package's step reuses its cached build
    wheel_dists = ["icml25-shared"] + [dist for dist, _, _ in packages]
    wheels = [] if args.skip_wheels else [Step(f"checks: wheels {dist}", [*tools, "wheels", dist])
                                          for dist in wheel_dists]
    # every figure each package's `demo --quick` saves: no overlapping text, every axis labelled
    figures = [Step("checks: figures", [*tools, "figures", *(dist for dist, _, _ in packages if args.packages)],
                    timeout_s=1800)]
    docs = []
    if not args.packages:  # the site covers every member: built and browser-checked in the full run only
        docs_tool = ROOT / "tools" / "docs.py"
        docs = [Step("docs: mkdocs build --strict + browser check",
                     [str(python), str(docs_tool), "gate", "--site", str(junit_dir / "site"),
                      "--out", str(ROOT / "out" / "docs-check")])]
    start = time.perf_counter()
    steps = run_steps(first + docs + figures + tests + wheels, args.jobs)
    counts = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    for step in steps:
        for key in counts:
            counts[key] += step.counts.get(key, 0)
    failed_steps = [s.name for s in steps if not s.ok]
    failed = counts["failures"] + counts["errors"] + len([s for s in steps if not s.ok and not s.counts])
    passed = counts["tests"] - counts["failures"] - counts["errors"] - counts["skipped"]
    print(f"\n{len(steps)} steps in {time.perf_counter() - start:.0f}s; failed steps: {failed_steps or 'none'}")
    print(f"total: {passed} passed, {failed} failed, {counts['skipped']} skipped")
    return 1 if failed_steps else 0


def command_demo(python: Path, packages: list[tuple[str, str, Path]], args: argparse.Namespace) -> int:
    out = ROOT / "out"
    steps = [Step(f"demo: {module}", [str(python), "-m", module, "demo", "--out", str(out / module)],
                  timeout_s=DEMO_TIMEOUT_S) for _, module, _ in packages]
    steps = run_steps(steps, args.jobs)
    lines = ["# Demo report", "",
             f"`python tools/dev.py demo` on {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; "
             "each package's `python -m <pkg> demo`.", "",
             "| package | status | seconds | table | figure |", "|---|---|---|---|---|"]
    sections = []
    for (dist, module, _), step in zip(packages, steps, strict=True):
        folder = out / module
        table, figure = folder / "demo.md", folder / "demo.png"
        status = "ok" if step.ok else f"failed (exit {step.returncode})"
        link_t = f"[demo.md]({module}/demo.md)" if table.exists() else "missing"
        link_f = f"[demo.png]({module}/demo.png)" if figure.exists() else "missing"
        lines.append(f"| {dist} | {status} | {step.seconds:.0f} | {link_t} | {link_f} |")
        body = table.read_text().strip() if table.exists() else "```\n" + step.output.strip()[-3000:] + "\n```"
        image = f"\n\n![{dist}]({module}/demo.png)" if figure.exists() else ""
        sections += ["", f"## {dist}", "", body + image]
    out.mkdir(exist_ok=True)
    (out / "REPORT.md").write_text("\n".join(lines + sections) + "\n")
    bad = [s.name for s in steps if not s.ok or not (out / s.name.split(": ")[1] / "demo.md").exists()]
    print(f"\nwrote {out / 'REPORT.md'}; failed: {bad or 'none'}")
    return 1 if bad else 0


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    extra = argv[argv.index("--") + 1:] if "--" in argv else []
    argv = argv[:argv.index("--")] if "--" in argv else argv
    if argv[:1] == ["pytest"]:  # pytest's own options may come without "--" (hatch can drop it)
        first = next((i for i, a in enumerate(argv) if a.startswith("-") and a not in ("--triton", "-h", "--help")),
                     len(argv))
        argv, extra = argv[:first], argv[first:] + extra
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("command", choices=["demo", "test", "setup", "docs", "pytest", "static", "mypy", "deptry",
                                            "imports"])
    parser.add_argument("--root", type=Path, default=ROOT, help="imports: the workspace root (for tests)")
    parser.add_argument("names", nargs="*", help="pytest/mypy/deptry: the suites or members (default: all)")
    parser.add_argument("--packages", default="", help="comma-separated distributions (default: all)")
    parser.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1), help="steps run at once")
    parser.add_argument("--venv", type=Path, default=Path(os.environ.get("ICML25_VENV", ROOT / ".venv")))
    parser.add_argument("--reinstall", action="store_true", help="reinstall even if nothing changed")
    parser.add_argument("--skip-wheels", action="store_true", help="test: skip the wheel/fresh-venv check")
    parser.add_argument("--triton", action="store_true", help="pytest: the Triton-marked tests, interpreted")
    parser.add_argument("--install-browser", action="store_true",
                        help="test: a headless Chromium for the browser check (npm registry into .venv/chromium, "
                             "else Debian's chromium with apt as root)")
    args = parser.parse_args(argv)
    if args.command == "pytest":
        return command_pytest(args.names, triton=args.triton, extra=extra)
    if args.command == "mypy":
        return command_mypy(args.names)
    if args.command == "deptry":
        return command_deptry(args.names)
    if args.command == "imports":
        return command_imports(args.root)
    if args.command == "static":
        steps = run_steps(static_steps(sys.executable, args.names or None), jobs=1)
        return 0 if all(step.ok for step in steps) else 1
    everything = members()
    wanted = {p.strip() for p in args.packages.split(",") if p.strip()}
    unknown = wanted - {d for d, _, _ in everything} - {m for _, m, _ in everything}
    if unknown:
        raise SystemExit(f"unknown packages {sorted(unknown)}; known: {[d for d, _, _ in everything]}")
    packages = [p for p in everything if not wanted or p[0] in wanted or p[1] in wanted]
    python = ensure_environment(args.venv, everything, reinstall=args.reinstall)
    full_test = args.command == "test" and not args.packages
    if full_test or args.command in ("docs", "setup"):  # the site's toolchain: not for demo or a partial test
        ensure_docs_tools(python, args.venv)
    if full_test and args.install_browser:
        sys.path.insert(0, str(ROOT / "tools"))
        from docs import install_chromium

        install_chromium()
    if args.command == "setup":
        print(f"environment ready: {python}")
        return 0
    if args.command == "docs":  # build strictly and serve on 127.0.0.1:8000
        return subprocess.call([str(python), str(ROOT / "tools" / "docs.py"), "serve"])
    return (command_test if args.command == "test" else command_demo)(python, packages, args)


if __name__ == "__main__":
    raise SystemExit(main())
