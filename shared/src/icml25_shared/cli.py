"""The ``python -m <pkg> demo`` / ``python -m <pkg> reproduce`` frame shared by every package.

A package's ``__main__.py`` is three lines::

    from icml25_shared.cli import run_cli
    raise SystemExit(run_cli("mypkg", demo="mypkg.experiments:demo", reproduce="mypkg.experiments:reproduce"))

A command given as ``"module:function"`` is imported only when it runs, so ``--help`` stays fast and works
in a base install that lacks the experiments' dependencies; a callable works too.

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

``paper`` (the citation) and the distribution's one-line summary head ``--help``. ``demo`` and
``reproduce`` need the distribution's ``cli`` extra (matplotlib, tqdm); ``requires`` maps a command to a
further extra it needs (``{"demo": "data"}``). When a requirement of those extras is not installed, the
command prints one line naming the ``pip install "<dist>[extra]"`` to run and exits 2. A console
script's usage line shows the script's own name.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import random
import re
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

__all__ = ["ExtraCommand", "RunContext", "progress", "run_cli", "save_figure", "seed_everything"]

T = TypeVar("T")
log = logging.getLogger(__name__)


def seed_everything(seed: int) -> np.random.Generator:
    """Seed python's ``random``, numpy's global state and torch (when imported).

    Parameters
    ----------
    seed : int
        Non-negative seed.

    Returns
    -------
    numpy.random.Generator
        A generator seeded with ``seed``.

    Raises
    ------
    TypeError
        When ``seed`` is not a non-negative int.
    """
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
    """Wrap ``iterable`` in a tqdm bar (stderr) when ``enabled`` and tqdm is installed.

    Parameters
    ----------
    iterable : iterable
        The items, passed through unchanged.
    enabled : bool, default True
        Show the bar (a package's ``progress=`` flag).
    desc : str, optional
        The bar's label.
    total : int, optional
        Number of items, for iterables without ``len``.

    Returns
    -------
    iterator
        The items of ``iterable``.
    """
    if enabled:
        try:
            from tqdm.auto import tqdm
        except ImportError:
            log.debug("tqdm is not installed; progress bars are off")
        else:
            return iter(tqdm(iterable, desc=desc, total=total, leave=False))
    return iter(iterable)


def save_figure(fig: Any, path: str | Path, *, dpi: int = 120) -> Path:
    """Save a matplotlib figure to ``path`` (parents created) and close it.

    Parameters
    ----------
    fig : matplotlib.figure.Figure
        The figure.
    path : str or Path
        Destination (PNG by its suffix).
    dpi : int, default 120
        Resolution.

    Returns
    -------
    Path
        ``path``.
    """
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
    """Where and how one CLI command runs.

    Attributes
    ----------
    package : str
        The import name.
    command : str
        ``"demo"`` or ``"reproduce"``.
    out : Path
        Output folder.
    seed : int
        ``--seed``.
    quick : bool
        ``--quick`` (smaller sizes, for smoke tests).
    rng : numpy.random.Generator
        Seeded with ``seed``.
    written : list of Path
        Files written through this context.
    options : dict
        The package's own ``reproduce`` options (empty for ``demo``).
    """

    package: str
    command: str
    out: Path
    seed: int
    quick: bool
    rng: np.random.Generator = field(repr=False)
    written: list[Path] = field(default_factory=list)
    options: dict[str, Any] = field(default_factory=dict)

    def path(self, name: str) -> Path:
        """A path inside the output folder (the folder is created).

        Parameters
        ----------
        name : str
            File name.

        Returns
        -------
        Path
            ``out / name``.
        """
        self.out.mkdir(parents=True, exist_ok=True)
        return self.out / name

    def _record(self, path: Path) -> Path:
        if path not in self.written:
            self.written.append(path)
        return path

    def write_table(self, table: str | Sequence[Any], name: str | None = None, *,
                    headers: Sequence[str] | None = None) -> Path:
        """Write a markdown table to ``<out>/<name or command>.md``.

        Parameters
        ----------
        table : str or sequence of rows
            Markdown text, or rows (mappings, or sequences with ``headers``) rendered by
            :func:`icml25_shared.tables.markdown_table`.
        name : str, optional
            File stem (default: the command).
        headers : sequence of str, optional
            Column names for rows.

        Returns
        -------
        Path
            The file written.
        """
        if isinstance(table, str) and headers is not None:
            raise ValueError("headers apply to rows; a markdown table already has its header")
        if not isinstance(table, str):
            from icml25_shared.tables import markdown_table

            table = markdown_table(table, headers)
        path = self.path(f"{name or self.command}.md")
        path.write_text(table.rstrip() + "\n")
        return self._record(path)

    def write_json(self, obj: Any, name: str | None = None) -> Path:
        """Write ``obj`` to ``<out>/<name or command>.json``.

        Parameters
        ----------
        obj : object
            JSON data; numpy arrays and scalars, paths and dataclasses are converted.
        name : str, optional
            File stem (default: the command).

        Returns
        -------
        Path
            The file written.
        """
        path = self.path(f"{name or self.command}.json")
        path.write_text(json.dumps(obj, indent=2, default=_jsonable))
        return self._record(path)

    def save_figure(self, fig: Any, name: str | None = None) -> Path:
        """Save a matplotlib figure to ``<out>/<name or command>.png``.

        Parameters
        ----------
        fig : matplotlib.figure.Figure
            The figure (closed afterwards).
        name : str, optional
            File stem (default: the command).

        Returns
        -------
        Path
            The file written.
        """
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


def _check_command(command: Command | str, role: str) -> None:
    """Refuse a command that is neither a callable nor a ``"module:function"`` string (checked at entry)."""
    if callable(command):
        return
    if not isinstance(command, str):
        raise TypeError(f"run_cli: {role} must be a callable or a 'module:function' string, got "
                        f"{type(command).__name__}")
    module_name, sep, attribute = command.partition(":")
    if not sep or not module_name or not attribute:
        raise ValueError(f"run_cli: {role} must be a callable or a 'module:function' string, got {command!r}")


def _resolve_command(command: Command | str, role: str) -> Command:
    """Return ``command``, importing it first when it is given as ``"module:function"``."""
    if callable(command):
        return command
    import importlib

    module_name, _, attribute = str(command).partition(":")
    try:
        function = getattr(importlib.import_module(module_name), attribute)
    except (ImportError, AttributeError) as error:
        raise ImportError(f"run_cli: {role}={command!r} cannot be imported: {error}") from error
    if not callable(function):
        raise TypeError(f"run_cli: {role} {command!r} names {type(function).__name__}, not a function")
    return function


OptionAdder = Callable[[argparse.ArgumentParser], Any]
_COMMON_OPTIONS = ("command", "out", "seed", "quick")


@dataclass(frozen=True)
class ExtraCommand:
    """A package command besides demo and reproduce.

    Attributes
    ----------
    help : str
        Its line in ``python -m <pkg> --help``.
    run : callable
        ``run(argv) -> int``: parses ``argv`` (the arguments after the command's name) itself and returns
        the exit code.
    """

    help: str
    run: Callable[[list[str]], int]


def distribution_of(package: str) -> str | None:
    """The installed distribution that provides import package ``package`` (None when not installed)."""
    # A member's console script names its module: ~30 ms, where packages_distributions() reads every
    # installed RECORD (~1 s in a full environment); editable installs list no top-level files anyway.
    for entry in metadata.entry_points(group="console_scripts"):
        if entry.value.split(":")[0].split(".")[0] == package and entry.dist is not None:
            return entry.dist.name
    try:
        names = metadata.packages_distributions().get(package, [])
    except Exception:  # noqa: BLE001 - broken metadata of an unrelated distribution
        names = []
    return names[0] if names else None


def _requirement_name(requirement: str) -> str:
    return re.split(r"[\s\[<>=!~;(]", requirement.strip(), maxsplit=1)[0]


def _requirement_extras(requirement: str) -> list[str]:
    match = re.match(r"\s*[A-Za-z0-9._-]+\s*\[([^\]]*)\]", requirement)
    return [e.strip() for e in match.group(1).split(",") if e.strip()] if match else []


def missing_extra(dist: str, extra: str) -> list[str]:
    """Requirements of ``dist[extra]`` whose distribution is not installed (empty when all are).

    A requirement whose module is installed under another distribution's name (``xgboost`` from
    ``xgboost-cpu``) counts as installed.

    A requirement that itself names extras (``icml25-shared[cli]``) is followed into them.
    """
    return _missing(dist, extra, seen=set())


def _missing(dist: str, extra: str, seen: set[tuple[str, str]]) -> list[str]:
    if (dist.lower(), extra) in seen:
        return []
    seen.add((dist.lower(), extra))
    try:
        requirements = metadata.requires(dist) or []
    except metadata.PackageNotFoundError:
        return [dist]
    missing = []
    for requirement in requirements:
        body, _, marker = requirement.partition(";")
        if not re.search(rf"""extra\s*==\s*['"]{re.escape(extra)}['"]""", marker):
            continue
        name = _requirement_name(body)
        try:
            metadata.version(name)
        except metadata.PackageNotFoundError:
            if not _module_importable(name):
                missing.append(name)
            continue
        for inner in _requirement_extras(body):
            missing += [m for m in _missing(name, inner, seen) if m not in missing]
    return missing


def _module_importable(name: str) -> bool:
    """Whether a top-level module of the requirement's name is installed under another distribution.

    Builds that ship one module under several distribution names (``xgboost-cpu`` provides ``xgboost``)
    satisfy the requirement. The module is located, not imported.
    """
    import importlib.util

    try:
        return importlib.util.find_spec(re.sub(r"[-.]+", "_", name)) is not None
    except (ImportError, ValueError):
        return False


def _declares_extra(dist: str, extra: str) -> bool:
    return extra in (metadata.metadata(dist).get_all("Provides-Extra") or [])


def _prog(package: str) -> str:
    script = Path(sys.argv[0]).name if sys.argv and sys.argv[0] else ""
    if not script or script in ("__main__.py", "-c", "-m") or script.endswith(".py") or "pytest" in script:
        return f"python -m {package}"
    return script


def _description(package: str, dist: str | None, paper: str | None, description: str | None) -> str | None:
    lines = []
    if dist is not None:
        summary = (metadata.metadata(dist).get_all("Summary") or [""])[0]
        if summary:
            lines.append(summary)
    if description and not lines:  # no installed summary (a source tree): the package's own text
        lines.append(description)
    if paper:
        lines.append(f"Paper: {paper}")
    return "\n\n".join(lines) or None


def build_parser(
    package: str,
    description: str | None = None,
    reproduce_options: OptionAdder | None = None,
    extra_commands: dict[str, ExtraCommand] | None = None,
    prog: str | None = None,
) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=prog or f"python -m {package}", description=description,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
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


def run_cli(package: str, *, demo: Command | str, reproduce: Command | str, argv: list[str] | None = None,
            description: str | None = None, reproduce_options: OptionAdder | None = None,
            extra_commands: dict[str, ExtraCommand] | None = None, paper: str | None = None,
            requires: dict[str, str] | None = None) -> int:
    """Parse ``argv`` and run ``demo``, ``reproduce`` or one of ``extra_commands``; return the exit code.

    Parameters
    ----------
    package : str
        The import name (``python -m <package>``).
    demo, reproduce : callable or str
        The two commands; each receives a :class:`RunContext`. A string ``"module:function"`` is imported
        only when its command runs.
    argv : list of str, optional
        Arguments (default ``sys.argv[1:]``).
    description : str, optional
        Help text used when the distribution's summary cannot be read (running from a source tree).
    reproduce_options : callable, optional
        Adds the package's own ``reproduce`` options to its sub-parser.
    extra_commands : dict of str to ExtraCommand, optional
        Commands besides demo and reproduce.
    paper : str, optional
        The paper's citation, shown by ``--help``.
    requires : dict of str to str, optional
        Command name -> extra of the package's distribution that the command needs.

    Returns
    -------
    int
        0 on success, 2 when a required extra is missing.
    """
    _check_command(demo, "demo")
    _check_command(reproduce, "reproduce")
    argv = list(sys.argv[1:] if argv is None else argv)
    extra_commands = extra_commands or {}
    clash = {"demo", "reproduce"} & set(extra_commands)
    if clash:
        raise ValueError(f"extra_commands may not redefine {sorted(clash)}")
    unknown = set(requires or {}) - {"demo", "reproduce"} - set(extra_commands)
    if unknown:
        raise ValueError(f"requires names unknown commands {sorted(unknown)}")
    dist = distribution_of(package)
    prog = _prog(package)
    if argv and argv[0] in extra_commands:
        if _missing_extra_exit(package, dist, argv[0], requires, prog):
            return 2
        return extra_commands[argv[0]].run(argv[1:])
    parser = build_parser(package, _description(package, dist, paper, description), reproduce_options,
                          extra_commands, prog=prog)
    args = parser.parse_args(argv)
    if args.seed < 0:
        raise SystemExit(f"--seed must be non-negative, got {args.seed}")
    if _missing_extra_exit(package, dist, args.command, requires, prog):
        return 2
    logging.basicConfig(level=os.environ.get("LOGLEVEL", "WARNING"), format="%(levelname)s %(name)s: %(message)s")
    _use_agg()
    out = args.out if args.out is not None else Path("out") / package
    options = {k: v for k, v in vars(args).items() if k not in _COMMON_OPTIONS}
    ctx = RunContext(package=package, command=args.command, out=out, seed=args.seed, quick=args.quick,
                     rng=seed_everything(args.seed), options=options)
    start = time.perf_counter()
    command = _resolve_command(demo, "demo") if args.command == "demo" else _resolve_command(reproduce, "reproduce")
    command(ctx)
    elapsed = time.perf_counter() - start
    files = ", ".join(str(p) for p in ctx.written) or "nothing"
    print(f"{package} {args.command} finished in {elapsed:.1f}s; wrote {files}")
    return 0


def _missing_extra_exit(package: str, dist: str | None, command: str, requires: dict[str, str] | None,
                        prog: str) -> bool:
    """Print the one-line install hint and return True when ``command``'s extras are not installed."""
    if dist is None:  # a source tree: nothing installed to read the extras from
        return False
    extras = ["cli"] if command in ("demo", "reproduce") and _declares_extra(dist, "cli") else []
    extra = (requires or {}).get(command)
    if extra is not None and extra not in extras:
        extras.append(extra)
    missing = [name for e in extras for name in missing_extra(dist, e)]
    if not missing:
        return False
    names = ", ".join(dict.fromkeys(missing))
    wanted = ",".join(extras)
    print(f'{prog} {command} needs the extras [{wanted}] ({names} not installed): pip install "{dist}[{wanted}]"',
          file=sys.stderr)
    return True
