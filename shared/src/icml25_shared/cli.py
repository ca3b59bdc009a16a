"""The ``python -m <pkg> demo`` / ``python -m <pkg> reproduce`` frame shared by every package.

A package's ``__main__.py`` is three lines::

    from icml25_shared.cli import run_cli
    from mypkg.experiments import demo, reproduce
    raise SystemExit(run_cli("mypkg", demo=demo, reproduce=reproduce))

Each command receives a :class:`RunContext` (output folder, seed, quick flag, seeded generator) and
writes through it: ``ctx.write_table(markdown)`` -> ``<out>/<command>.md``, ``ctx.save_figure(fig)``
-> ``<out>/<command>.png``, ``ctx.write_json(obj)`` -> ``<out>/<command>.json``. The repo's demo
runner links those files from ``out/REPORT.md``.

A package whose ``reproduce`` takes options of its own passes ``reproduce_options``, a function that adds
them to the ``reproduce`` sub-parser (so ``--help`` lists them); their parsed values reach the command as
``ctx.options`` (a dict keyed by argparse ``dest``; empty for ``demo``).

A package with commands beyond demo and reproduce (an audit tool, a server) passes ``extra_commands``,
a mapping from name to :class:`ExtraCommand`: ``--help`` lists them, and ``python -m mypkg NAME ...``
hands the remaining arguments to the command, which parses them itself and returns the exit code.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import random
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

__all__ = ["ExtraCommand", "RunContext", "progress", "run_cli", "save_figure", "seed_everything"]

T = TypeVar("T")
log = logging.getLogger(__name__)


def seed_everything(seed: int) -> np.random.Generator:
    """Seed python's ``random``, numpy's global state and torch (when imported); return a Generator."""
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise TypeError(f"seed must be a non-negative int, got {seed!r}")
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch = sys.modules.get("torch")
    if torch is not None:
        torch.manual_seed(seed)
    return np.random.default_rng(seed)


def progress(iterable: Iterable[T], *, enabled: bool = True, desc: str | None = None,
             total: int | None = None) -> Iterator[T]:
    """Wrap ``iterable`` in a tqdm bar (stderr) when ``enabled`` and tqdm is installed."""
    if enabled:
        try:
            from tqdm.auto import tqdm
        except ImportError:
            log.debug("tqdm is not installed; progress bars are off")
        else:
            return iter(tqdm(iterable, desc=desc, total=total, leave=False))
    return iter(iterable)


def save_figure(fig: Any, path: str | Path, *, dpi: int = 120) -> Path:
    """Save a matplotlib figure (Agg backend) to ``path`` and close it."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=dpi, bbox_inches="tight")
    import matplotlib.pyplot as plt

    plt.close(fig)
    return path


def _use_agg() -> None:
    try:
        import matplotlib
    except ImportError:
        return
    matplotlib.use("Agg")


@dataclass
class RunContext:
    """Where and how one CLI command runs."""

    package: str
    command: str
    out: Path
    seed: int
    quick: bool
    rng: np.random.Generator = field(repr=False)
    written: list[Path] = field(default_factory=list)
    options: dict[str, Any] = field(default_factory=dict)

    def path(self, name: str) -> Path:
        """A path inside the output folder (created)."""
        self.out.mkdir(parents=True, exist_ok=True)
        return self.out / name

    def _record(self, path: Path) -> Path:
        if path not in self.written:
            self.written.append(path)
        return path

    def write_table(self, markdown: str, name: str | None = None) -> Path:
        """Write the command's markdown table to ``<out>/<name or command>.md``."""
        path = self.path(f"{name or self.command}.md")
        path.write_text(markdown.rstrip() + "\n")
        return self._record(path)

    def write_json(self, obj: Any, name: str | None = None) -> Path:
        """Write ``obj`` (numpy arrays allowed) to ``<out>/<name or command>.json``."""
        path = self.path(f"{name or self.command}.json")
        path.write_text(json.dumps(obj, indent=2, default=_jsonable))
        return self._record(path)

    def save_figure(self, fig: Any, name: str | None = None) -> Path:
        """Save a matplotlib figure to ``<out>/<name or command>.png``."""
        return self._record(save_figure(fig, self.path(f"{name or self.command}.png")))


def _jsonable(value: Any) -> Any:
    if hasattr(value, "tolist"):
        return value.tolist()
    if isinstance(value, Path):
        return str(value)
    if hasattr(value, "__dataclass_fields__"):
        from dataclasses import asdict

        return asdict(value)
    raise TypeError(f"cannot write {type(value).__name__} to JSON")


Command = Callable[[RunContext], Any]


OptionAdder = Callable[[argparse.ArgumentParser], Any]
_COMMON_OPTIONS = ("command", "out", "seed", "quick")


@dataclass(frozen=True)
class ExtraCommand:
    """A package command besides demo and reproduce: ``run(argv)`` parses ``argv`` (the arguments after the
    command's name) itself and returns the exit code; ``help`` is its line in ``python -m <pkg> --help``."""

    help: str
    run: Callable[[list[str]], int]


def build_parser(
    package: str,
    description: str | None = None,
    reproduce_options: OptionAdder | None = None,
    extra_commands: dict[str, ExtraCommand] | None = None,
) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=f"python -m {package}", description=description)
    sub = parser.add_subparsers(dest="command", required=True)
    for name, extra in (extra_commands or {}).items():
        # Listed for --help only: run_cli hands these commands their arguments before parsing.
        sub.add_parser(name, help=f"{extra.help} (options: {name} --help)", add_help=False)
    helps = {
        "demo": "a short run on bundled data (under a minute); writes a table and a PNG",
        "reproduce": "the paper's headline experiment at CPU scale; writes JSON and PNG",
    }
    for name, text in helps.items():
        cmd = sub.add_parser(name, help=text, description=text)
        cmd.add_argument("--out", type=Path, default=None, help=f"output folder (default ./out/{package})")
        cmd.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
        cmd.add_argument("--quick", action="store_true", help="smaller sizes, for smoke tests")
        if name == "reproduce" and reproduce_options is not None:
            reproduce_options(cmd)
    return parser


def run_cli(package: str, *, demo: Command, reproduce: Command, argv: list[str] | None = None,
            description: str | None = None, reproduce_options: OptionAdder | None = None,
            extra_commands: dict[str, ExtraCommand] | None = None) -> int:
    """Parse ``argv`` and run ``demo``, ``reproduce`` or one of ``extra_commands``; return the exit code."""
    argv = list(sys.argv[1:] if argv is None else argv)
    clash = {"demo", "reproduce"} & set(extra_commands or {})
    if clash:
        raise ValueError(f"extra_commands may not redefine {sorted(clash)}")
    if argv and argv[0] in (extra_commands or {}):
        return extra_commands[argv[0]].run(argv[1:])
    args = build_parser(package, description, reproduce_options, extra_commands).parse_args(argv)
    if args.seed < 0:
        raise SystemExit(f"--seed must be non-negative, got {args.seed}")
    logging.basicConfig(level=os.environ.get("LOGLEVEL", "WARNING"), format="%(levelname)s %(name)s: %(message)s")
    _use_agg()
    out = args.out if args.out is not None else Path("out") / package
    options = {k: v for k, v in vars(args).items() if k not in _COMMON_OPTIONS}
    ctx = RunContext(package=package, command=args.command, out=out, seed=args.seed, quick=args.quick,
                     rng=seed_everything(args.seed), options=options)
    start = time.perf_counter()
    command = demo if args.command == "demo" else reproduce
    command(ctx)
    elapsed = time.perf_counter() - start
    files = ", ".join(str(p) for p in ctx.written) or "nothing"
    print(f"{package} {args.command} finished in {elapsed:.1f}s; wrote {files}")
    return 0
