"""Time a method and its peer on the same inputs in one process; report medians and ratios.

Examples
--------
>>> from icml25_shared.bench import BenchmarkReport, compare
>>> report = BenchmarkReport("demo", packages=["numpy"])
>>> row = report.add(compare(lambda: sum(range(1000)), lambda: sum(list(range(1000))), label="sum",
...                          repeats=3, sizes={"n": 1000}))
>>> len(row.ours.times_s), row.speedup > 0
(3, True)
>>> print(report.to_markdown().splitlines()[2])
| case | n | ours | ours median (s) | peer | peer median (s) | speedup |
"""

from __future__ import annotations

import json
import os
import platform
import signal
import statistics
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

__all__ = ["BenchmarkReport", "Comparison", "Timing", "compare", "environment", "hard_limit", "run_jobs",
           "time_call", "write_results"]


@dataclass(frozen=True)
class Timing:
    """Wall-clock seconds of ``repeats`` calls after ``warmup`` discarded ones.

    Attributes
    ----------
    name : str
        What was timed.
    times_s : tuple of float
        Seconds of each timed call.
    warmup : int
        Untimed calls made first.
    """

    name: str
    times_s: tuple[float, ...]
    warmup: int

    @property
    def median_s(self) -> float:
        """Median of ``times_s`` (seconds)."""
        return statistics.median(self.times_s)

    @property
    def min_s(self) -> float:
        """Fastest of ``times_s`` (seconds)."""
        return min(self.times_s)


@dataclass(frozen=True)
class Comparison:
    """One benchmark row: ours vs the peer on identical inputs.

    Attributes
    ----------
    label : str
        The case, e.g. ``"n=1024"``.
    ours, peer : Timing
        Our timing and the peer's (``peer`` None when there is no peer).
    sizes : dict
        The problem size.
    metrics : dict
        Accuracy numbers measured on the same outputs.
    """

    label: str
    ours: Timing
    peer: Timing | None
    sizes: dict[str, Any] = field(default_factory=dict)
    metrics: dict[str, Any] = field(default_factory=dict)

    @property
    def speedup(self) -> float | None:
        """Peer median / our median (> 1 means we are faster); None without a peer."""
        if self.peer is None:
            return None
        return self.peer.median_s / max(self.ours.median_s, 1e-12)

    def as_dict(self) -> dict[str, Any]:
        """The row as a JSON-ready dict (times, medians, sizes, metrics, speedup).

        Returns
        -------
        dict
            Keys ``label``, ``ours``, ``ours_median_s``, ``ours_times_s``, ``sizes``, ``metrics`` and, with
            a peer, ``peer``, ``peer_median_s``, ``peer_times_s``, ``speedup``.
        """
        row = {
            "label": self.label,
            "ours": self.ours.name,
            "ours_median_s": self.ours.median_s,
            "ours_times_s": list(self.ours.times_s),
            "sizes": self.sizes,
            "metrics": self.metrics,
        }
        if self.peer is not None:
            row.update(peer=self.peer.name, peer_median_s=self.peer.median_s,
                       peer_times_s=list(self.peer.times_s), speedup=self.speedup)
        return row


def _sync_torch() -> None:
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_available():
        torch.cuda.synchronize()


def time_call(fn: Callable[[], Any], *, name: str = "fn", warmup: int = 1, repeats: int = 5) -> Timing:
    """Run ``fn`` ``warmup`` times untimed, then ``repeats`` times timed (CUDA synchronised).

    Parameters
    ----------
    fn : callable
        Zero-argument function to time.
    name : str, default "fn"
        Recorded in the result.
    warmup : int, default 1
        Untimed calls first (non-negative).
    repeats : int, default 5
        Timed calls (at least one).

    Returns
    -------
    Timing
        The wall-clock seconds of each timed call.
    """
    if warmup < 0 or repeats < 1:
        raise ValueError(f"need warmup >= 0 and repeats >= 1, got warmup={warmup}, repeats={repeats}")
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeats):
        _sync_torch()
        start = time.perf_counter()
        fn()
        _sync_torch()
        times.append(time.perf_counter() - start)
    return Timing(name=name, times_s=tuple(times), warmup=warmup)


def compare(
    ours: Callable[[], Any],
    peer: Callable[[], Any] | None,
    *,
    label: str,
    ours_name: str = "ours",
    peer_name: str = "peer",
    warmup: int = 1,
    repeats: int = 5,
    sizes: dict[str, Any] | None = None,
    metrics: dict[str, Any] | None = None,
) -> Comparison:
    """Time ``ours`` and ``peer``, two zero-argument callables closing over the same inputs.

    Each is warmed up and repeated on its own (no alternation), so caches of one do not help the other.

    Parameters
    ----------
    ours, peer : callable
        Our method and the peer's (``peer`` may be None).
    label : str
        The case's name.
    ours_name, peer_name : str
        Names shown in the table.
    warmup, repeats : int
        As for :func:`time_call`.
    sizes, metrics : dict, optional
        The problem size and accuracy numbers measured on the same outputs.

    Returns
    -------
    Comparison
        Both timings and the ratio.
    """
    ours_t = time_call(ours, name=ours_name, warmup=warmup, repeats=repeats)
    peer_t = None if peer is None else time_call(peer, name=peer_name, warmup=warmup, repeats=repeats)
    return Comparison(label=label, ours=ours_t, peer=peer_t, sizes=dict(sizes or {}), metrics=dict(metrics or {}))


def environment(packages: Iterable[str] = ()) -> dict[str, Any]:
    """Python, platform, CPU count and the installed versions of ``packages``.

    Parameters
    ----------
    packages : iterable of str
        Distribution names whose versions to record.

    Returns
    -------
    dict
        ``python``, ``platform``, ``machine``, ``cpu_count`` and ``versions`` (None for an absent one).
    """
    import os

    versions: dict[str, str | None] = {}
    for name in packages:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    return {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "machine": platform.machine(),
        "cpu_count": os.cpu_count(),
        "versions": versions,
    }


class BenchmarkReport:
    """Collects :class:`Comparison` rows; writes JSON and renders a markdown table.

    Parameters
    ----------
    title : str
        The table's heading.
    packages : iterable of str
        Distributions whose versions the report records.
    """

    def __init__(self, title: str, *, packages: Iterable[str] = ()) -> None:
        self.title = title
        self.environment = environment(packages)
        self.rows: list[Comparison] = []

    def add(self, row: Comparison) -> Comparison:
        """Append ``row`` and return it."""
        self.rows.append(row)
        return row

    def to_dict(self) -> dict[str, Any]:
        """Title, environment and rows as a JSON-ready dict."""
        return {"title": self.title, "environment": self.environment, "rows": [r.as_dict() for r in self.rows]}

    def write_json(self, path: str | Path) -> Path:
        """Write :meth:`to_dict` to ``path`` (parents created); return the path."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(self.to_dict(), indent=2, default=_jsonable))
        return path

    def to_markdown(self) -> str:
        """A ``###`` heading, one table row per comparison and a line with the machine and versions."""
        metric_keys = sorted({k for r in self.rows for k in r.metrics})
        size_keys = sorted({k for r in self.rows for k in r.sizes})
        head = ["case", *size_keys, "ours", "ours median (s)", "peer", "peer median (s)", "speedup", *metric_keys]
        lines = [f"### {self.title}", "", "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        for r in self.rows:
            cells = [r.label, *(_fmt(r.sizes.get(k, "")) for k in size_keys), r.ours.name, _fmt(r.ours.median_s),
                     r.peer.name if r.peer else "-", _fmt(r.peer.median_s) if r.peer else "-",
                     f"{r.speedup:.2f}x" if r.speedup is not None else "-",
                     *(_fmt(r.metrics.get(k, "")) for k in metric_keys)]
            lines.append("| " + " | ".join(cells) + " |")
        env = self.environment
        versions = ", ".join(f"{k} {v}" for k, v in env["versions"].items())
        lines += ["", f"Python {env['python']} on {env['machine']} ({env['cpu_count']} cores); {versions}".rstrip("; ")]
        return "\n".join(lines)


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def _jsonable(value: Any) -> Any:
    if hasattr(value, "tolist"):
        return value.tolist()
    if hasattr(value, "__dataclass_fields__"):
        return asdict(value)
    return str(value)


def write_results(results: dict[str, Any], path: str | Path) -> Path:
    """Write ``results`` as indented JSON to ``path`` (parents created); return the path.

    A device script calls it after each finished check, so that a run stopped by its time limit keeps
    what it measured.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(results, indent=1, default=_jsonable) + "\n")
    return path


@contextmanager
def hard_limit(seconds: int, results: dict[str, Any], path: str | Path) -> Iterator[dict[str, Any]]:
    """Stop the block after ``seconds`` of wall time, keeping the partial ``results`` on disk.

    On time-out ``results["stopped_by_limit_s"]`` is set, ``results`` is written to ``path`` and the
    process exits with status 3 (``SystemExit``); on a normal exit the alarm is cancelled and an alarm set
    before the block is re-armed with its remaining time. Uses ``SIGALRM`` with a Python handler, so it works
    in the main thread of a POSIX process (elsewhere the block runs unlimited), and a call blocked in C (a
    hung CUDA synchronisation) delays the stop until it returns; put an outer ``timeout`` around the script
    when that matters.

    Parameters
    ----------
    seconds : int
        The limit (positive).
    results : dict
        The mutable results the block fills in; yielded back.
    path : str or Path
        Where the partial results go on time-out.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> out = pathlib.Path(tempfile.mkdtemp()) / "gpu.json"
    >>> with hard_limit(60, {"device": "cpu"}, out) as results:
    ...     results["checks"] = {"ok": True}
    >>> write_results(results, out).read_text().count("ok")
    1
    """
    from icml25_shared.validation import Interval, check_param

    check_param("seconds", seconds, [Interval(int, 1, None, closed="left")], owner="hard_limit")
    usable = hasattr(signal, "SIGALRM")
    if usable:
        import threading

        usable = threading.current_thread() is threading.main_thread()
    if not usable:
        yield results
        return

    def stop(*_: Any) -> None:
        results["stopped_by_limit_s"] = seconds
        write_results(results, path)
        raise SystemExit(3)

    previous = signal.signal(signal.SIGALRM, stop)
    outer_left = signal.alarm(seconds)  # an alarm set outside: re-armed with what is left of it on exit
    started = time.monotonic()
    try:
        yield results
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
        if outer_left:
            signal.alarm(max(1, round(outer_left - (time.monotonic() - started))))


def run_jobs(jobs: Mapping[str, Sequence[str]], *, workers: int, seconds: float,
             inline: Callable[[str], Any] | None = None) -> dict[str, str]:
    """Run named jobs under one wall-clock budget; return each job's status.

    Each job is a command line run as its own process with ``OMP_NUM_THREADS=1``, at most ``workers`` at
    a time (``-1``: all at once), in the order given; no job starts at or after the deadline, and running
    jobs are killed there (and on any exception, so none is left behind). With ``workers=0`` the jobs run
    one after the other in this process through ``inline(name)`` (what the CPU smoke tests use): the
    budget is then checked only before each job, and its exceptions propagate.

    Parameters
    ----------
    jobs : mapping of str to sequence of str
        Job name -> command line (``[sys.executable, script, ...]``).
    workers : int
        Processes at once: a positive number, ``-1`` for all, ``0`` for in-process.
    seconds : float
        Wall-clock budget from the call (0: no job starts).
    inline : callable, optional
        ``inline(name)`` runs a job in this process; required when ``workers`` is 0.

    Returns
    -------
    dict of str to str
        Per job: ``"done"``, ``"failed (<exit code>)"``, ``"timed out"`` or ``"not started (budget)"``.
    """
    import subprocess

    from icml25_shared.validation import Interval, check_param

    check_param("workers", workers, [Interval(int, -1, None, closed="left")], owner="run_jobs")
    check_param("seconds", seconds, [Interval(float, 0, None, closed="left")], owner="run_jobs")
    for name, command in jobs.items():
        if isinstance(command, (str, bytes)) or not all(isinstance(part, str) for part in command):
            raise TypeError(f"run_jobs: jobs[{name!r}] must be a command line as a list of str, got {command!r}")
    if workers == 0 and inline is None:
        raise ValueError("run_jobs: workers=0 runs the jobs in process and needs inline; got inline=None")
    deadline = time.monotonic() + seconds
    status: dict[str, str] = {}
    if workers == 0:
        for name in jobs:
            if time.monotonic() >= deadline:
                status[name] = "not started (budget)"
                continue
            assert inline is not None
            inline(name)
            status[name] = "done"
        return status
    width = len(jobs) if workers < 0 else workers
    pending = list(jobs)
    running: dict[str, subprocess.Popen[bytes]] = {}
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    try:
        while pending or running:
            while pending and len(running) < width and time.monotonic() < deadline:
                name = pending.pop(0)
                running[name] = subprocess.Popen(list(jobs[name]), env=env)
            for name, proc in list(running.items()):
                if proc.poll() is not None:
                    status[name] = "done" if proc.returncode == 0 else f"failed ({proc.returncode})"
                    del running[name]
            if time.monotonic() >= deadline:
                for name, proc in running.items():
                    proc.kill()
                    proc.wait()
                    status[name] = "timed out"
                for name in pending:
                    status[name] = "not started (budget)"
                running, pending = {}, []
            time.sleep(0.05)
    finally:  # an exception (a command that cannot start, Ctrl-C) must not leave jobs running unattended
        for proc in running.values():
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    return {name: status[name] for name in jobs}
