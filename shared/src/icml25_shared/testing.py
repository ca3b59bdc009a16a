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
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["CommandRun", "assert_fast_startup", "assert_figure_legible", "assert_rejects", "figure_problems",
           "legible_saved_figures", "run_command", "run_module"]

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


def assert_fast_startup(module: str, *, heavy: tuple[str, ...] = ("torch", "transformers", "sklearn", "scipy", "matplotlib",
                                                          "tqdm", "xgboost", "lightgbm", "shap"), factor: float = 15.0,
                        slack: float = 0.5) -> None:
    """Check that ``python -m <module> --help`` loads none of ``heavy`` and starts about as fast as Python.

    The time is relative to ``python -c pass`` (best of 3 each, so a loaded machine slows both alike):
    ``--help`` must take less than ``factor`` bare starts plus ``slack`` seconds.

    Parameters
    ----------
    module : str
        The package, as given to ``python -m``.
    heavy : tuple of str
        Top-level modules that importing the package and ``--help`` must not load.
    factor, slack : float, default 15.0 and 0.5
        The bound on ``--help``'s time, in bare interpreter starts plus seconds.

    Raises
    ------
    AssertionError
        Naming the heavy modules loaded, or both times.
    """
    probe = (f"import sys, json, runpy; sys.argv = [{module!r}, '--help']\n"
             f"try:\n    runpy.run_module({module!r}, run_name='__main__')\nexcept SystemExit:\n    pass\n"
             f"print(json.dumps([m for m in {tuple(heavy)!r} if m in sys.modules]))")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, f"python -m {module} --help failed:\n{done.stderr[-4000:]}"
    loaded = json.loads(done.stdout.strip().splitlines()[-1])
    assert loaded == [], f"python -m {module} --help loads {loaded}"

    def best(args: list[str]) -> float:
        times = []
        for _ in range(3):
            start = time.perf_counter()
            subprocess.run([sys.executable, *args], capture_output=True, timeout=120, check=True)
            times.append(time.perf_counter() - start)
        return min(times)

    bare, help_time = best(["-c", "pass"]), best(["-m", module, "--help"])
    assert help_time < factor * bare + slack, (f"python -m {module} --help took {help_time:.2f} s, above {factor:g} "
                                               f"x python -c pass ({bare:.2f} s) + {slack:g} s")


def _tick_labels(axis: Any) -> list[Any]:
    """The tick labels ``axis`` draws: ticks outside the view limits keep labels that are never drawn."""
    low, high = sorted(float(v) for v in axis.get_view_interval())
    slack = 1e-9 * max(high - low, 1e-300)
    labels = []
    for tick in [*axis.get_major_ticks(), *axis.get_minor_ticks()]:
        location = tick.get_loc()
        if location is None or not low - slack <= float(location) <= high + slack:
            continue
        labels += [label for label in (tick.label1, tick.label2) if label.get_visible() and label.get_text().strip()]
    return labels


def _texts(fig: Any) -> list[tuple[str, Any]]:
    """Every visible, non-empty text of ``fig`` with a name saying where it sits."""
    found: list[tuple[str, Any]] = [("suptitle", fig._suptitle)] if getattr(fig, "_suptitle", None) else []
    found += [("figure text", t) for t in fig.texts]
    for i, ax in enumerate(fig.axes):
        where = f"axes {i}" + (f" ({ax.get_title()!r})" if ax.get_title() else "")
        found += [(f"{where} title", t) for t in (ax.title, ax._left_title, ax._right_title)]
        axes = [("x", ax.xaxis), ("y", ax.yaxis)] + ([("z", ax.zaxis)] if hasattr(ax, "zaxis") else [])
        for letter, axis in axes:
            found.append((f"{where} {letter} label", axis.label))
            found += [(f"{where} {letter} tick label", t) for t in _tick_labels(axis)]
            found.append((f"{where} {letter} offset", axis.get_offset_text()))
        found += [(f"{where} text", t) for t in ax.texts]
        legend = ax.get_legend()
        if legend is not None and legend.get_visible():
            found += [(f"{where} legend", t) for t in [legend.get_title(), *legend.get_texts()]]
    for legend in fig.legends:
        found += [("figure legend", t) for t in [legend.get_title(), *legend.get_texts()]]
    unique: dict[int, tuple[str, Any]] = {}  # the suptitle is in fig.texts too: first name wins
    for name, text in found:
        unique.setdefault(id(text), (name, text))
    return [(name, t) for name, t in unique.values() if t.get_visible() and t.get_text().strip()]


def figure_problems(fig: Any, *, tolerance: float = 1.0) -> list[str]:
    """What makes a matplotlib figure hard to read: text that overlaps other text, axes without labels.

    The figure is drawn at its own size; every visible text's tight bounding box (titles, axis labels,
    tick labels, offsets, annotations, legends) is compared with every other's. An axis whose tick labels
    show needs a label (panels that share an axis and hide its tick labels need none); a colour bar's axis
    is exempt.

    Parameters
    ----------
    fig : matplotlib.figure.Figure
        The figure, as the command saves it.
    tolerance : float, default 1.0
        Pixels two boxes may share in each direction before they count as overlapping.

    Returns
    -------
    list of str
        One line per problem; empty when the figure is legible.
    """
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    problems = []
    for i, ax in enumerate(fig.axes):
        if not ax.get_visible() or not ax.axison or hasattr(ax, "_colorbar"):
            continue
        where = f"axes {i}" + (f" ({ax.get_title()!r})" if ax.get_title() else "")
        axes = [("x", ax.xaxis), ("y", ax.yaxis)] + ([("z", ax.zaxis)] if hasattr(ax, "zaxis") else [])
        for letter, axis in axes:
            if _tick_labels(axis) and not axis.label.get_text().strip():
                problems.append(f"{where} has no {letter} label")
    texts = [(name, t, t.get_window_extent(renderer), _corners(t, renderer)) for name, t in _texts(fig)]
    for a in range(len(texts)):
        for b in range(a + 1, len(texts)):
            (name_a, text_a, box_a, corners_a), (name_b, text_b, box_b, corners_b) = texts[a], texts[b]
            width = min(box_a.x1, box_b.x1) - max(box_a.x0, box_b.x0)
            height = min(box_a.y1, box_b.y1) - max(box_a.y0, box_b.y0)
            if width > tolerance and height > tolerance and _overlap_depth(corners_a, corners_b) > tolerance:
                problems.append(f"{name_a} {text_a.get_text()!r} overlaps {name_b} {text_b.get_text()!r} "
                                f"({width:.0f} x {height:.0f} px)")
    return problems


def _corners(text: Any, renderer: Any) -> list[tuple[float, float]]:
    """The four corners of a text's box as drawn, rotated with the text.

    Its window extent is the upright box around that rectangle, which for tick labels at 30-60 degrees
    overlaps neighbours that the glyphs never touch.
    """
    box = text.get_window_extent(renderer)
    rotation = float(text.get_rotation())
    if rotation % 90 == 0:
        return [(box.x0, box.y0), (box.x1, box.y0), (box.x1, box.y1), (box.x0, box.y1)]
    text.set_rotation(0)
    try:
        flat = text.get_window_extent(renderer)
    finally:
        text.set_rotation(rotation)
    import math

    cos, sin = math.cos(math.radians(rotation)), math.sin(math.radians(rotation))
    cx, cy = (box.x0 + box.x1) / 2, (box.y0 + box.y1) / 2
    half_w, half_h = flat.width / 2, flat.height / 2
    return [(cx + dx * cos - dy * sin, cy + dx * sin + dy * cos)
            for dx, dy in ((-half_w, -half_h), (half_w, -half_h), (half_w, half_h), (-half_w, half_h))]


def _overlap_depth(a: list[tuple[float, float]], b: list[tuple[float, float]]) -> float:
    """How far two convex quadrilaterals overlap along the axis where they overlap least.

    Separating axes: 0 or less when they do not overlap.
    """
    depth = float("inf")
    for corners in (a, b):
        for i in range(4):
            (x0, y0), (x1, y1) = corners[i], corners[(i + 1) % 4]
            length = ((x1 - x0) ** 2 + (y1 - y0) ** 2) ** 0.5
            if length == 0:
                continue
            nx, ny = -(y1 - y0) / length, (x1 - x0) / length
            pa, pb = [x * nx + y * ny for x, y in a], [x * nx + y * ny for x, y in b]
            depth = min(depth, min(max(pa), max(pb)) - max(min(pa), min(pb)))
    return depth


def assert_figure_legible(fig: Any, *, tolerance: float = 1.0) -> None:
    """Fail when :func:`figure_problems` finds overlapping text or axes without labels.

    Call it on every figure a ``demo`` or ``reproduce`` writes, at its default size (a test can keep the
    figure open by patching ``matplotlib.pyplot.close`` or build it with the command's plotting function).

    Parameters
    ----------
    fig : matplotlib.figure.Figure
        The figure.
    tolerance : float, default 1.0
        Pixels two text boxes may share in each direction.

    Raises
    ------
    AssertionError
        Listing every problem.

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import matplotlib.pyplot as plt
    >>> fig, ax = plt.subplots(figsize=(4, 3))
    >>> _ = ax.plot([0, 1], [0, 1])
    >>> _ = ax.set_xlabel("time (s)"), ax.set_ylabel("loss")
    >>> assert_figure_legible(fig)
    >>> _ = ax.set_ylabel("")
    >>> assert_figure_legible(fig)
    Traceback (most recent call last):
    ...
    AssertionError: figure is hard to read:
    axes 0 has no y label
    """
    problems = figure_problems(fig, tolerance=tolerance)
    if problems:
        raise AssertionError("figure is hard to read:\n" + "\n".join(problems))



@contextmanager
def legible_saved_figures() -> Iterator[list[str]]:
    """Check every figure a command saves: within the block, each one must pass :func:`assert_figure_legible`.

    Patches :meth:`RunContext.save_figure` for the block and yields the names saved, in order.

    Examples
    --------
    >>> import tempfile
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import matplotlib.pyplot as plt
    >>> import numpy as np
    >>> from icml25_shared.cli import RunContext
    >>> ctx = RunContext(package="toy", command="demo", out=Path(tempfile.mkdtemp()), seed=0, quick=True,
    ...                  rng=np.random.default_rng(0))
    >>> fig, ax = plt.subplots(figsize=(4, 3))
    >>> _ = ax.plot([0, 1], [0, 1])
    >>> with legible_saved_figures() as saved:
    ...     ctx.save_figure(fig)
    Traceback (most recent call last):
    ...
    AssertionError: ...has no x label...
    """
    from icml25_shared.cli import RunContext

    saved: list[str] = []
    original = RunContext.save_figure

    def checked(self: Any, fig: Any, name: str | None = None) -> Any:
        assert_figure_legible(fig)
        saved.append(name or self.command)
        return original(self, fig, name)

    RunContext.save_figure = checked  # type: ignore[method-assign]
    try:
        yield saved
    finally:
        RunContext.save_figure = original  # type: ignore[method-assign]
