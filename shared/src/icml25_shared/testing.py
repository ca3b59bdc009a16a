"""Test helpers for the ``python -m <pkg> demo|reproduce`` commands every package ships.

>>> run = run_command(main, "demo", tmp_path)          # in-process; checks demo.md and demo.png
>>> run = run_module("mypkg", "reproduce", tmp_path)   # a real `python -m mypkg reproduce --quick`
>>> run.table, run.result, run.figure                  # <command>.md text, parsed .json, .png path
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["CommandRun", "run_command", "run_module"]

DEFAULT_EXPECT = {"demo": ("md", "png"), "reproduce": ("json",)}


@dataclass(frozen=True)
class CommandRun:
    """What one command wrote: the table text ("" if none), the parsed JSON (None if none), the PNG."""

    out: Path
    table: str
    result: Any
    figure: Path | None


def _collect(command: str, out: Path, expect: tuple[str, ...]) -> CommandRun:
    files = {suffix: out / f"{command}.{suffix}" for suffix in ("md", "json", "png")}
    for suffix in expect:
        path = files[suffix]
        assert path.exists(), f"{command} did not write {path.name} (wrote {sorted(p.name for p in out.iterdir())})"
        assert path.stat().st_size > (1000 if suffix == "png" else 0), f"{path.name} is empty or too small"
    return CommandRun(
        out=out,
        table=files["md"].read_text() if files["md"].exists() else "",
        result=json.loads(files["json"].read_text()) if files["json"].exists() else None,
        figure=files["png"] if files["png"].exists() else None,
    )


def run_command(main: Callable[[list[str]], int], command: str, out: Path, *, quick: bool = True,
                expect: tuple[str, ...] | None = None) -> CommandRun:
    """Call a package's ``main(argv)`` in-process and check it wrote ``expect`` (by default a table and
    a PNG for demo, JSON for reproduce)."""
    argv = [command, "--out", str(out)] + (["--quick"] if quick else [])
    assert main(argv) == 0, f"{command} returned non-zero"
    return _collect(command, Path(out), DEFAULT_EXPECT.get(command, ()) if expect is None else expect)


def run_module(module: str, command: str, out: Path, *, quick: bool = True, timeout: float = 300,
               env: dict[str, str] | None = None, expect: tuple[str, ...] | None = None) -> CommandRun:
    """Run ``python -m <module> <command> [--quick] --out OUT`` in a subprocess and check its files."""
    argv = [sys.executable, "-m", module, command, "--out", str(out)] + (["--quick"] if quick else [])
    done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, env=env or dict(os.environ))
    assert done.returncode == 0, f"python -m {module} {command} failed:\n{done.stderr[-4000:]}"
    return _collect(command, Path(out), DEFAULT_EXPECT.get(command, ()) if expect is None else expect)
