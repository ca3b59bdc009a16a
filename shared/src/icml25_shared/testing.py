"""Test helpers for the ``python -m <pkg> demo|reproduce`` commands every package ships.

``run_command(main, "demo", tmp_path)`` calls a package's ``main`` in-process and checks that ``demo.md`` and
``demo.png`` were written; ``run_module("mypkg", "reproduce", tmp_path)`` runs a real
``python -m mypkg reproduce --quick``. Both return a :class:`CommandRun` (table text, parsed JSON, PNG path).

Examples
--------
>>> import tempfile
>>> from pathlib import Path
>>> from icml25_shared.cli import run_cli
>>> def main(argv):
...     return run_cli("toy", demo=lambda ctx: ctx.write_table([[1, 2.5]], headers=["a", "b"]),
...                    reproduce=lambda ctx: ctx.write_json({"x": 1}), argv=argv)
>>> out = Path(tempfile.mkdtemp())
>>> run = run_command(main, "demo", out, expect=("md",))  # doctest: +ELLIPSIS
toy demo finished in ...s; wrote .../demo.md
>>> print(run.table, end="")
| a | b |
|---|---|
| 1 | 2.5 |
>>> run_command(main, "reproduce", out).result  # doctest: +ELLIPSIS
toy reproduce finished in ...
{'x': 1}
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

__all__ = ["CommandRun", "assert_rejects", "run_command", "run_module"]

DEFAULT_EXPECT = {"demo": ("md", "png"), "reproduce": ("json",)}


@dataclass(frozen=True)
class CommandRun:
    """What one command wrote.

    Attributes
    ----------
    out : Path
        The output folder.
    table : str
        ``<command>.md`` ("" when not written).
    result : object
        ``<command>.json`` parsed (None when not written).
    figure : Path or None
        ``<command>.png`` when written.
    """

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
    """Call a package's ``main(argv)`` in-process and check the files it wrote.

    Parameters
    ----------
    main : callable
        The package's ``main(argv) -> int``.
    command : str
        ``"demo"``, ``"reproduce"`` or another command of ``main``.
    out : Path
        Output folder (``--out``).
    quick : bool, default True
        Pass ``--quick``.
    expect : tuple of str, optional
        Suffixes that must be written (default: md and png for demo, json for reproduce).

    Returns
    -------
    CommandRun
        What the command wrote.

    Raises
    ------
    AssertionError
        When ``main`` returns non-zero or an expected file is missing or empty.
    """
    argv = [command, "--out", str(out)] + (["--quick"] if quick else [])
    assert main(argv) == 0, f"{command} returned non-zero"
    return _collect(command, Path(out), DEFAULT_EXPECT.get(command, ()) if expect is None else expect)


def run_module(module: str, command: str, out: Path, *, quick: bool = True, timeout: float = 300,
               env: dict[str, str] | None = None, expect: tuple[str, ...] | None = None) -> CommandRun:
    """Run ``python -m <module> <command> [--quick] --out OUT`` in a subprocess and check its files.

    Parameters
    ----------
    module : str
        The package to run.
    command : str
        Its command.
    out : Path
        Output folder.
    quick : bool, default True
        Pass ``--quick``.
    timeout : float, default 300
        Seconds before the subprocess is killed.
    env : dict, optional
        Environment (default: this process's).
    expect : tuple of str, optional
        As for :func:`run_command`.

    Returns
    -------
    CommandRun
        What the command wrote.
    """
    argv = [sys.executable, "-m", module, command, "--out", str(out)] + (["--quick"] if quick else [])
    done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, env=env or dict(os.environ))
    assert done.returncode == 0, f"python -m {module} {command} failed:\n{done.stderr[-4000:]}"
    return _collect(command, Path(out), DEFAULT_EXPECT.get(command, ()) if expect is None else expect)


def assert_rejects(entry: Callable[..., Any], name: str, *, wrong_type: Any, wrong_value: Any,
                   call: Callable[[Any], Any] | None = None, **valid: Any) -> None:
    """Check that a public entry point rejects a wrong type and a wrong value of one parameter.

    ``entry(**valid, name=wrong_type)`` must raise TypeError and ``entry(**valid, name=wrong_value)``
    ValueError, each with a message that names ``name``. For estimators whose parameters are validated
    in ``fit`` (scikit-learn's convention), pass ``call``: it receives the constructed object and runs
    the step that validates (``call=lambda est: est.fit(X, y)``).

    Parameters
    ----------
    entry : callable
        A class or function of the package's public API.
    name : str
        The keyword parameter under test.
    wrong_type, wrong_value : object
        A value of a type the parameter does not accept, and one of an accepted type but out of range.
    call : callable, optional
        Run on ``entry(...)``'s result to reach the validation.
    **valid : object
        Other keyword arguments ``entry`` needs.

    Raises
    ------
    AssertionError
        When a case does not raise the expected error or its message does not name ``name``.
    """
    for value, expected in ((wrong_type, TypeError), (wrong_value, ValueError)):
        try:
            result = entry(**valid, **{name: value})
            if call is not None:
                call(result)
        except expected as err:
            if name not in str(err):
                raise AssertionError(f"{getattr(entry, '__qualname__', entry)}({name}={value!r}) raised "
                                     f"{expected.__name__} without naming {name!r}: {err}") from err
        except Exception as err:  # noqa: BLE001 - the wrong kind of error is the failure being reported
            raise AssertionError(f"{getattr(entry, '__qualname__', entry)}({name}={value!r}) raised "
                                 f"{type(err).__name__}, expected {expected.__name__}: {err}") from err
        else:
            raise AssertionError(f"{getattr(entry, '__qualname__', entry)}({name}={value!r}) raised nothing, "
                                 f"expected {expected.__name__}")
