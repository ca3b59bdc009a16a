"""Test a member at the lowest versions its pyproject declares (CI's `lowest` job).

    python tools/lowest.py --packages fastpd,dsi
    python tools/lowest.py --packages all --keep   # every member; keep the venvs under out/lowest/

For each member, uv resolves the member's declared requirements (its base dependencies, those of every
extra but `test`, and those of the icml25-shared extras it asks for) with ``--resolution lowest-direct``:
each declared requirement at its lowest version, everything they pull in at the highest compatible one.
A fresh venv then gets those versions pinned, the member (not editable) with its `test` extra, and runs the
member's tests marked `smoke` (all tests but `slow` and `triton` ones when none is marked). A member that
declares triton also runs its `triton`-marked tests under ``TRITON_INTERPRET=1``, so that its triton floor is
exercised by the kernels and not only installed.

torch is the exception: it stays at the CPU build pinned in tools/constraints.txt, since the older torch
wheels on PyPI are CUDA builds of several GB. Wheels only (``--only-binary :all:``): a lower bound whose
release has no wheel for this Python fails here instead of compiling for minutes.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import venv
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from checks import CONSTRAINTS, ROOT, Member, normalise, parse_requirement, tomllib, workspace  # noqa: E402

UNPINNED = {"torch"}  # held at tools/constraints.txt (see the module docstring)
SHARED = "icml25-shared"


def base_requirements(member: Member) -> tuple[str, ...]:
    """The member's base dependencies (without extras)."""
    project = tomllib.loads((member.path / "pyproject.toml").read_text())["project"]
    return tuple(project.get("dependencies", []))


def declared_requirements(member: Member, members: list[Member]) -> list[str]:
    """The member's requirement strings whose lower bounds are tested (no test-only tools, no workspace
    members; the shared extras it asks for are expanded into their requirements)."""
    by_name = {normalise(m.dist): m for m in members}
    found: list[str] = []
    base_and_extras = [base_requirements(member)] + [reqs for name, reqs in member.extras.items() if name != "test"]
    for group in base_and_extras:
        for requirement in group:
            name, extras = parse_requirement(requirement)
            provider = by_name.get(name)
            if provider is None:
                found.append(requirement)
                continue
            found += list(base_requirements(provider))
            for extra in extras:
                found += list(provider.extras.get(extra, ()))
    seen, unique = set(), []
    for requirement in found:
        key = requirement.split(";")[0].replace(" ", "")
        if key not in seen and parse_requirement(requirement)[0] not in by_name:
            seen.add(key)
            unique.append(requirement)
    return unique


def lowest_pins(requirements: list[str], python: Path, workdir: Path) -> dict[str, str]:
    """name -> version that uv's lowest-direct resolution picks for each declared requirement."""
    source = workdir / "lowest.in"
    source.write_text("\n".join(r for r in requirements if parse_requirement(r)[0] not in UNPINNED) + "\n")
    version = subprocess.run([str(python), "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                             capture_output=True, text=True, check=True).stdout.strip()
    uv = shutil.which("uv") or str(Path(sys.executable).parent / "uv")
    done = subprocess.run([uv, "pip", "compile", "--resolution", "lowest-direct", "--python-version", version,
                           "--only-binary", ":all:", "--no-header", "--no-annotate", "-q", str(source)], capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"uv could not resolve the declared lower bounds:\n{done.stderr[-3000:]}")
    direct = {parse_requirement(r)[0] for r in requirements}
    pins = {}
    for line in done.stdout.splitlines():
        line = line.split("#")[0].strip()
        if "==" in line:
            name, pinned = line.split("==", 1)
            if normalise(name) in direct and normalise(name) not in UNPINNED:
                pins[normalise(name)] = pinned.split(";")[0].strip()
    return pins


def lower_bound(requirement: str) -> str | None:
    """The version after ``>=`` in a requirement string (None when there is none)."""
    match = re.search(r">=\s*([0-9][^,;\s]*)", requirement.split(";")[0])
    return match.group(1) if match else None


def untestable_bounds(own: list[str], pins: dict[str, str]) -> list[tuple[str, str, str]]:
    """(name, declared, resolved) for every lower bound the member declares (its highest, when it names a
    distribution twice) that the resolution had to exceed: no wheel for this Python at that version, or a
    conflict with another declared requirement."""
    from packaging.version import Version

    declared: dict[str, str] = {}
    for requirement in own:
        name, bound = parse_requirement(requirement)[0], lower_bound(requirement)
        if bound is not None and (name not in declared or Version(bound) > Version(declared[name])):
            declared[name] = bound
    return sorted((name, bound, pins[name]) for name, bound in declared.items()
                  if name in pins and Version(pins[name]) > Version(bound))


def declares_triton(requirements: list[str]) -> bool:
    """Whether triton is among the member's declared requirements (its base, extras or shared extras)."""
    return any(parse_requirement(r)[0] == "triton" for r in requirements)


def has_marker(tests: Path, marker: str) -> bool:
    """Whether any test file under ``tests`` uses ``pytest.mark.<marker>``."""
    return any(f"mark.{marker}" in p.read_text(errors="ignore") for p in tests.rglob("*.py"))


def run_member(member: Member, members: list[Member], *, keep: Path | None, marker: str | None) -> dict:
    """Install ``member`` at its lowest declared versions in a fresh venv and run its smoke tests."""
    start = time.perf_counter()
    workdir = Path(tempfile.mkdtemp(prefix=f"lowest-{member.dist}-")) if keep is None else keep / member.dist
    if workdir.exists() and keep is not None:
        shutil.rmtree(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    env_dir = workdir / "venv"
    venv.EnvBuilder(with_pip=True).create(env_dir)
    python = env_dir / "bin" / "python"
    requirements = declared_requirements(member, members)
    result: dict[str, Any] = {"dist": member.dist, "python": sys.version.split()[0], "requirements": requirements}
    try:
        pins = lowest_pins(requirements, python, workdir)
    except RuntimeError as err:
        return {**result, "ok": False, "stage": "resolve", "error": str(err), "seconds": time.perf_counter() - start}
    result["pins"] = pins
    own = [*base_requirements(member), *(r for name, reqs in member.extras.items() if name != "test" for r in reqs)]
    raised = untestable_bounds(own, pins)
    if raised:
        return {**result, "ok": False, "stage": "bounds", "seconds": time.perf_counter() - start,
                "error": "declared lower bounds below the lowest version with a wheel that resolves together "
                         "(raise them): " + ", ".join(f"{n}>={d} -> {p}" for n, d, p in raised)}
    pin_file = workdir / "lowest-pins.txt"
    pin_file.write_text("".join(f"{name}=={version}\n" for name, version in sorted(pins.items())))
    shared = members[0]
    shared_extras = sorted({e for r in member.dependencies for n, es in [parse_requirement(r)] if n == SHARED
                            for e in es})
    member_extras = sorted(set(member.extras) | {"test"})
    specs = [f"{shared.path}[{','.join(shared_extras)}]" if shared_extras else str(shared.path),
             f"{member.path}[{','.join(member_extras)}]"]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV"))}
    env["PIP_CONSTRAINT"] = ""
    install = [str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check", "--no-compile",
               "--only-binary", ":all:", "-c", str(CONSTRAINTS), "-c", str(pin_file), *specs]
    done = subprocess.run(install, capture_output=True, text=True, env=env)
    if done.returncode != 0:
        return {**result, "ok": False, "stage": "install", "error": (done.stdout + done.stderr)[-6000:],
                "seconds": time.perf_counter() - start}
    freeze = subprocess.run([str(python), "-m", "pip", "freeze"], capture_output=True, text=True, env=env).stdout
    installed = {normalise(line.split("==")[0]): line.split("==")[1] for line in freeze.splitlines() if "==" in line}
    result["installed"] = {name: installed.get(name, "?") for name in sorted({*pins, *(UNPINNED & {
        parse_requirement(r)[0] for r in requirements})})}
    tests = member.path / "tests"
    has_smoke = has_marker(tests, "smoke")
    selection = marker or ("smoke" if has_smoke else "not slow and not triton")
    run = subprocess.run([str(python), "-m", "pytest", str(tests), "-q", "-p", "no:cacheprovider", "-m", selection,
                          "-x"], capture_output=True, text=True, cwd=ROOT, env={**env, "MPLBACKEND": "Agg"})
    summary = [line for line in run.stdout.strip().splitlines() if line.strip()][-1:] or [""]
    ok = run.returncode == 0
    if ok and marker is None and declares_triton(requirements) and has_marker(tests, "triton"):
        run = subprocess.run([str(python), "-m", "pytest", str(tests), "-q", "-p", "no:cacheprovider", "-m", "triton",
                              "-x"], capture_output=True, text=True, cwd=ROOT,
                             env={**env, "MPLBACKEND": "Agg", "TRITON_INTERPRET": "1"})
        selection += "; triton (TRITON_INTERPRET=1)"
        summary += [line for line in run.stdout.strip().splitlines() if line.strip()][-1:] or [""]
        ok = run.returncode == 0
    result.update(ok=ok, stage="tests", selection=selection, summary="; ".join(summary),
                  error="" if ok else run.stdout[-4000:] + run.stderr[-1000:], seconds=time.perf_counter() - start)
    if keep is None:
        shutil.rmtree(workdir, ignore_errors=True)
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python tools/lowest.py", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--packages", required=True, help="comma-separated distributions, or 'all'")
    parser.add_argument("--keep", type=Path, default=None, help="keep venvs and pins under this folder")
    parser.add_argument("--marker", default=None, help="pytest -m expression (default: smoke, else not slow)")
    parser.add_argument("--json", type=Path, default=None, help="write the results here")
    parser.add_argument("--root", type=Path, default=ROOT)
    args = parser.parse_args(argv)
    members = workspace(args.root)
    wanted = {p.strip() for p in args.packages.split(",") if p.strip()}
    chosen = members if "all" in wanted else [m for m in members if {m.dist, m.module} & wanted]
    unknown = wanted - {"all"} - {m.dist for m in members} - {m.module for m in members}
    if unknown or not chosen:
        print(f"unknown packages {sorted(unknown)}; known: {[m.dist for m in members]}", file=sys.stderr)
        return 2
    results = []
    for member in chosen:
        result = run_member(member, members, keep=args.keep, marker=args.marker)
        results.append(result)
        pins = ", ".join(f"{k} {v}" for k, v in sorted(result.get("installed", result.get("pins", {})).items()))
        status = "passed" if result["ok"] else f"FAILED at {result['stage']}"
        print(f"lowest: {member.dist} {status} in {result['seconds']:.0f}s ({pins}) {result.get('summary', '')}",
              flush=True)
        if not result["ok"]:
            print(result["error"], flush=True)
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(results, indent=2))
    return 0 if all(r["ok"] for r in results) else 1


if __name__ == "__main__":
    raise SystemExit(main())
