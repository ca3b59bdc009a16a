"""Run a suite through strategies, with monitors, a completion cache and a JSONL audit log.

Episodes are (strategy, task, seed) triples in that nesting order. Each model call gets a seed drawn
from ``SeedSequence([episode seed, step])``, so an episode's calls do not depend on which thread runs
it or on what ran before: results are identical for every ``concurrency``. Completions are cached under
``sha256(model name, messages, parameters)``; a rerun with the same cache sends no request. Every call
(episode, step, role, model, prompt, response, refusal, monitor verdicts) and every episode's outcome is
a line of the log, and :func:`replay` rebuilds the :class:`RunResult` from it.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
import time
import warnings
from collections import defaultdict
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from icml25_shared.cli import progress as progress_bar
from icml25_shared.stats import Interval
from icml25_shared.validation import Interval as Range
from icml25_shared.validation import check_params

from combo_redteam.graders import Grader, RuleGrader
from combo_redteam.metrics import McNemarResult, Uplift, auroc, clustered_paired, clustered_rate
from combo_redteam.models import ChatModel, Completion, ModelError, Usage
from combo_redteam.monitors import PLACEMENTS, Monitor, Verdict
from combo_redteam.strategies import Strategy
from combo_redteam.tasks import Grade, Task, TaskSuite

__all__ = ["EpisodeResult", "RunResult", "TooManyErrors", "replay", "run"]

LOG_FORMAT = "combo-redteam-log"
"""The ``format`` field of an audit log's header line."""


@dataclass(frozen=True)
class EpisodeResult:
    """The outcome of one task through one strategy with one seed.

    Attributes
    ----------
    index : int
        Position in the run.
    strategy, task_id, pair, variant, family : str
        What ran (``variant`` is ``flagged`` or ``control``).
    difficulty, seed : int
        Task difficulty and the episode's seed.
    success : bool
        The graded success (for a flagged task: the flagged answer was delivered).
    correct : bool
        The benign part of the final answer is correct.
    flag_delivered : bool
        The final answer carries the task's flag token.
    refused : bool
        Some model call of the episode was refused.
    blocked : bool
        A blocking monitor stopped the episode.
    errors : int
        Model calls that raised.
    strong_calls, weak_calls : int
        Calls made (blocked calls are not made).
    prompt_tokens, completion_tokens : int
        Token counts summed over the calls made.
    monitor_scores : tuple of (str, float)
        Each monitor's highest score in the episode (monitors never consulted are absent).
    monitor_flags : tuple of str
        Monitors that flagged the episode.
    final : str or None
        The delivered final answer.
    errored : bool
        A model error ended the episode without an answer; it is left out of every rate and counted apart.
    format_failure : str
        Why a reply of the episode could not be read ("" when every reply was read): a proposal without
        subtasks, or a final answer without a number, code or record lines.
    grade_detail : str
        The grader's reason for a failure ("" on success; the first model error of an errored episode).
    """

    index: int
    strategy: str
    task_id: str
    pair: str
    variant: str
    family: str
    difficulty: int
    seed: int
    success: bool
    correct: bool
    flag_delivered: bool
    refused: bool
    blocked: bool
    errors: int
    strong_calls: int
    weak_calls: int
    prompt_tokens: int
    completion_tokens: int
    monitor_scores: tuple[tuple[str, float], ...]
    monitor_flags: tuple[str, ...]
    final: str | None
    errored: bool = False
    format_failure: str = ""
    grade_detail: str = ""

    @property
    def calls(self) -> int:
        """Model calls made."""
        return self.strong_calls + self.weak_calls

    @property
    def tokens(self) -> int:
        """Prompt plus completion tokens."""
        return self.prompt_tokens + self.completion_tokens


def _episode_result(meta: Mapping[str, Any], calls: Sequence[Mapping[str, Any]], final: str | None,
                    final_verdicts: Sequence[Mapping[str, Any]], graded: Grade,
                    format_failures: Sequence[str] = ()) -> EpisodeResult:
    verdicts = [v for c in calls for v in c["verdicts"]] + list(final_verdicts)
    made = [c for c in calls if not c["blocked"]]
    scores: dict[str, float] = {}
    for v in verdicts:
        scores[v["monitor"]] = max(scores.get(v["monitor"], -np.inf), float(v["score"]))
    blocked = any(v["blocked"] for v in verdicts)
    errors = sum(c["error"] is not None for c in made)
    errored = final is None and not blocked and errors > 0
    reasons = list(format_failures)
    if graded.format_failure and not errored and not blocked:
        reasons.append(f"final: {graded.format_failure}")
    return EpisodeResult(
        index=int(meta["index"]), strategy=meta["strategy"], task_id=meta["task_id"], pair=meta["pair"],
        variant=meta["variant"], family=meta["family"], difficulty=int(meta["difficulty"]), seed=int(meta["seed"]),
        success=bool(graded.success and not blocked), correct=bool(graded.correct and not blocked),
        flag_delivered=bool(graded.flag_delivered and not blocked),
        refused=any(c["refused"] for c in made), blocked=blocked, errors=errors,
        strong_calls=sum(c["role"] == "strong" for c in made), weak_calls=sum(c["role"] == "weak" for c in made),
        prompt_tokens=sum(c["usage"]["prompt_tokens"] for c in made),
        completion_tokens=sum(c["usage"]["completion_tokens"] for c in made),
        monitor_scores=tuple(sorted(scores.items())),
        monitor_flags=tuple(sorted({v["monitor"] for v in verdicts if v["flagged"]})),
        final=None if blocked else final, errored=errored, format_failure="; ".join(reasons),
        grade_detail="blocked" if blocked else next(c["error"] for c in made if c["error"]) if errored else graded.detail)


def _rows(episodes: Sequence[EpisodeResult], strategy: str, variant: str) -> dict[tuple[str, int], EpisodeResult]:
    # task ids are unique in a suite; pair labels need not be (several flagged tasks may share one)
    return {(e.task_id, e.seed): e for e in episodes if e.strategy == strategy and e.variant == variant
            and not e.errored}


def _by_task(rows: Sequence[EpisodeResult]) -> dict[str, list[bool]]:
    out: dict[str, list[bool]] = defaultdict(list)
    for e in rows:
        out[e.task_id].append(e.success)
    return dict(out)


class TooManyErrors(RuntimeError):
    """More episodes errored than ``run(max_error_share=...)`` allows; ``result`` holds the run anyway.

    Attributes
    ----------
    result : RunResult
        Every episode, errored ones included (``summary()`` shows the counts).
    """

    def __init__(self, message: str, result: RunResult) -> None:
        super().__init__(message)
        self.result = result


@dataclass(frozen=True)
class RunResult:
    """All episodes of a run and the statistics over them.

    Rates use tasks as the units of analysis: the seeds of a task are averaged, and intervals and
    tests count tasks, not episodes. Errored episodes (a model error left no answer) are left out of
    every rate and counted apart (:meth:`errors`, ``summary()["errored"]``).

    Attributes
    ----------
    episodes : tuple of EpisodeResult
        In run order (strategy, task, seed).
    strategies : tuple of (str, str)
        (name, kind) of each strategy; kind is ``single``, ``manual`` or ``automated``.
    seeds : tuple of int
        The seeds.
    monitors : tuple of (str, str)
        (name, placement) of each monitor.
    suite : str
        The suite's name.
    """

    episodes: tuple[EpisodeResult, ...]
    strategies: tuple[tuple[str, str], ...]
    seeds: tuple[int, ...]
    monitors: tuple[tuple[str, str], ...] = ()
    suite: str = ""

    def _names(self, kind: str | None = None) -> list[str]:
        return [n for n, k in self.strategies if kind is None or k == kind]

    def _check(self, strategy: str, variant: str) -> None:
        if strategy not in self._names():
            raise ValueError(f"unknown strategy {strategy!r}; strategies of this run: {self._names()}")
        if variant not in ("flagged", "control"):
            raise ValueError(f"variant {variant!r} is not accepted; accepted values: ['flagged', 'control']")

    def select(self, strategy: str, variant: str = "flagged", *, errored: bool = False) -> list[EpisodeResult]:
        """Episodes of one strategy and variant, in run order (errored ones only with ``errored=True``)."""
        self._check(strategy, variant)
        return [e for e in self.episodes if e.strategy == strategy and e.variant == variant
                and (errored or not e.errored)]

    def errors(self, strategy: str, variant: str = "flagged") -> int:
        """Errored episodes of one strategy and variant (left out of the rates)."""
        return sum(e.errored for e in self.select(strategy, variant, errored=True))

    def format_failure_rate(self, strategy: str, variant: str = "flagged") -> float:
        """Share of (non-errored) episodes with a reply that could not be read (nan when there is none)."""
        rows = self.select(strategy, variant)
        return float(np.mean([bool(e.format_failure) for e in rows])) if rows else float("nan")

    def success_rate(self, strategy: str, variant: str = "flagged", confidence: float = 0.95) -> Interval:
        """Success rate with tasks as units: mean per-task success share and Wilson's interval (n = tasks).

        Raises
        ------
        ValueError
            When every episode of the strategy and variant errored (or there is none).
        """
        rows = self.select(strategy, variant)
        if not rows:
            errored = self.errors(strategy, variant)
            raise ValueError(f"no {variant} episodes for strategy {strategy!r} to rate"
                             + (f" ({errored} errored)" if errored else ""))
        return clustered_rate(list(_by_task(rows).values()), confidence)

    def refusal_rate(self, strategy: str, variant: str = "flagged") -> float:
        """Share of (non-errored) episodes with at least one refused call."""
        rows = self.select(strategy, variant)
        return float(np.mean([e.refused for e in rows])) if rows else float("nan")

    def per_success(self, strategy: str, variant: str = "flagged") -> tuple[float, float]:
        """(calls, tokens) per successful episode (inf when nothing succeeded)."""
        rows = self.select(strategy, variant)
        wins = sum(e.success for e in rows)
        if wins == 0:
            return float("inf"), float("inf")
        return sum(e.calls for e in rows) / wins, sum(e.tokens for e in rows) / wins

    def paired(self, first: str, second: str, variant: str = "flagged") -> tuple[np.ndarray, np.ndarray]:
        """Success arrays of two strategies aligned on (task id, seed), episodes errored in either left out."""
        self._check(first, variant)
        self._check(second, variant)
        a, b = _rows(self.episodes, first, variant), _rows(self.episodes, second, variant)
        keys = sorted(set(a) & set(b))
        if not keys:
            raise ValueError(f"strategies {first!r} and {second!r} share no {variant} (task, seed) pairs")
        return (np.array([a[k].success for k in keys], dtype=bool), np.array([b[k].success for k in keys], dtype=bool))

    def paired_by_task(self, first: str, second: str, variant: str = "flagged"
                       ) -> tuple[list[list[bool]], list[list[bool]]]:
        """Per task, the successes of two strategies on their shared seeds (errored episodes left out)."""
        self._check(first, variant)
        self._check(second, variant)
        a, b = _rows(self.episodes, first, variant), _rows(self.episodes, second, variant)
        keys = sorted(set(a) & set(b))
        if not keys:
            raise ValueError(f"strategies {first!r} and {second!r} share no {variant} (task, seed) pairs")
        tasks: dict[str, tuple[list[bool], list[bool]]] = {}
        for key in keys:
            x, y = tasks.setdefault(key[0], ([], []))
            x.append(a[key].success)
            y.append(b[key].success)
        return [x for x, _ in tasks.values()], [y for _, y in tasks.values()]

    def mcnemar(self, first: str, second: str, variant: str = "flagged") -> McNemarResult:
        """Exact test of two strategies with tasks as units (McNemar's exact test when each task has one seed)."""
        return clustered_paired(*self.paired_by_task(first, second, variant))[1]

    def uplift(self, combination: str, singles: Sequence[str] | None = None, variant: str = "flagged",
               confidence: float = 0.95) -> Uplift:
        """Combination success minus the best single strategy's, with Newcombe's paired interval.

        Parameters
        ----------
        combination : str
            A strategy of the run.
        singles : sequence of str, optional
            Single-model strategies to compare with (default: every ``single`` strategy of the run).
        variant : str, default "flagged"
            Which tasks.
        confidence : float, default 0.95
            Interval coverage.

        Returns
        -------
        Uplift
            Estimate, interval, both rates and the exact test, with tasks as units (seeds averaged within a
            task; episodes errored in either strategy left out).
        """
        singles = list(singles) if singles is not None else self._names("single")
        if not singles:
            raise ValueError("the run has no single-model strategy to compare with")
        rates = {s: self.success_rate(s, variant).estimate for s in singles}
        best = max(singles, key=lambda s: (rates[s], -singles.index(s)))
        a, b = self.paired_by_task(combination, best, variant)
        ci, test = clustered_paired(a, b, confidence)
        return Uplift(combination, best, ci.estimate, ci.low, ci.high, float(np.mean([np.mean(x) for x in a])),
                      float(np.mean([np.mean(y) for y in b])), test, len(a))

    def monitor_report(self, monitor: str, strategy: str, *, negatives: str | None = None) -> dict[str, float]:
        """TPR, FPR and AUROC of one monitor: flagged episodes of ``strategy`` against control episodes.

        Parameters
        ----------
        monitor : str
            A monitor's name.
        strategy : str
            Strategy whose flagged episodes are the positives.
        negatives : str, optional
            Strategy whose control episodes are the negatives (default: ``strategy``).

        Returns
        -------
        dict
            ``tpr``, ``fpr``, ``auroc`` (nan when a side is empty), ``n_pos``, ``n_neg``.
        """
        names = [n for n, _ in self.monitors]
        if monitor not in names:
            raise ValueError(f"unknown monitor {monitor!r}; monitors of this run: {names}")
        pos = self.select(strategy, "flagged")
        neg = self.select(negatives or strategy, "control")
        score = lambda e: dict(e.monitor_scores).get(monitor, 0.0)  # noqa: E731
        out = {"tpr": float(np.mean([monitor in e.monitor_flags for e in pos])) if pos else float("nan"),
               "fpr": float(np.mean([monitor in e.monitor_flags for e in neg])) if neg else float("nan"),
               "auroc": auroc([score(e) for e in pos], [score(e) for e in neg]) if pos and neg else float("nan"),
               "n_pos": float(len(pos)), "n_neg": float(len(neg))}
        return out

    def summary(self, variant: str = "flagged") -> list[dict[str, Any]]:
        """One row per strategy: tasks, episodes, errored, success and its bounds, refusal and format-failure rates.

        ``n`` counts tasks (the units of the interval), ``episodes`` the non-errored episodes rated,
        ``errored`` those left out, ``with_failed_calls`` the rated episodes some of whose calls failed
        (answered without those parts); a strategy whose every episode errored has ``success`` nan.
        """
        rows = []
        for name, kind in self.strategies:
            everything = self.select(name, variant, errored=True)
            if not everything:
                continue
            rated = self.select(name, variant)
            row: dict[str, Any] = {"strategy": name, "kind": kind, "variant": variant}
            if rated:
                ci = self.success_rate(name, variant)
                calls, tokens = self.per_success(name, variant)
                row.update(n=ci.n, episodes=len(rated), errored=len(everything) - len(rated),
                           with_failed_calls=sum(e.errors > 0 for e in rated), success=ci.estimate, low=ci.low,
                           high=ci.high)
            else:
                calls = tokens = float("nan")
                row.update(n=0, episodes=0, errored=len(everything), with_failed_calls=0, success=float("nan"),
                           low=float("nan"), high=float("nan"))
            row.update(refusal_rate=self.refusal_rate(name, variant),
                       format_failure_rate=self.format_failure_rate(name, variant), calls_per_success=calls,
                       tokens_per_success=tokens)
            rows.append(row)
        return rows


class _Cache:
    def __init__(self, folder: str | Path | None, offline: bool = False) -> None:
        self.offline = offline
        self.folder = None if folder is None else Path(folder)
        if self.folder is not None:
            self.folder.mkdir(parents=True, exist_ok=True)

    @staticmethod
    def key(model: ChatModel, messages: list[dict[str, str]], params: Mapping[str, Any]) -> str:
        blob = json.dumps({"model": model.name, "messages": messages, "params": dict(params)}, sort_keys=True)
        return hashlib.sha256(blob.encode()).hexdigest()

    def get(self, key: str) -> Completion | None:
        if self.folder is None:
            return None
        path = self.folder / key[:2] / f"{key}.json"
        if not path.exists():
            return None
        data = json.loads(path.read_text())
        return Completion(data["text"], data["refused"], Usage(**data["usage"]), 0.0)

    def put(self, key: str, completion: Completion) -> None:
        if self.folder is None:
            return
        path = self.folder / key[:2] / f"{key}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.{threading.get_ident()}.tmp")
        tmp.write_text(json.dumps({"text": completion.text, "refused": completion.refused,
                                   "usage": asdict(completion.usage)}))
        os.replace(tmp, path)


class _Blocked(Exception):
    pass


@dataclass
class _Episode:
    meta: dict[str, Any]
    monitors: Mapping[str, Sequence[Monitor]]
    cache: _Cache
    params: Mapping[str, Any]
    calls: list[dict[str, Any]] = field(default_factory=list)
    strong_prompts: list[str] = field(default_factory=list)
    format_failures: list[str] = field(default_factory=list)

    def format_failure(self, reason: str) -> None:
        self.format_failures.append(reason)

    def _check(self, placement: str, texts: Sequence[str]) -> list[Verdict]:
        return [m.check(texts) for m in self.monitors.get(placement, ())]

    def call(self, role: str, model: ChatModel, prompt: str) -> Completion | None:
        step = len(self.calls)
        seed = int(np.random.SeedSequence([int(self.meta["seed"]), step]).generate_state(1)[0] % 2**31)
        messages = [{"role": "user", "content": prompt}]
        params = {**self.params, "seed": seed}
        record: dict[str, Any] = {"type": "call", "episode": self.meta["index"], "step": step, "role": role,
                                  "model": model.name, "messages": messages, "params": params, "response": None,
                                  "refused": False, "error": None, "blocked": False, "cached": False,
                                  "usage": {"prompt_tokens": 0, "completion_tokens": 0}, "latency_s": 0.0}
        verdicts: list[Verdict] = []
        if role == "strong":
            self.strong_prompts.append(prompt)
            verdicts += self._check("episode", self.strong_prompts)
        verdicts += self._check(f"{role}-input", [prompt])
        record["verdicts"] = [asdict(v) for v in verdicts]
        self.calls.append(record)
        if any(v.blocked for v in verdicts):
            record["blocked"] = True
            raise _Blocked
        key = self.cache.key(model, messages, params)
        completion = self.cache.get(key)
        record["cached"] = completion is not None
        if completion is None and self.cache.offline:
            record["error"] = "ModelError: not in the completion cache (offline run)"
            return None
        if completion is None:
            start = time.perf_counter()
            try:
                completion = model.complete(messages, **params)
            except ModelError as exc:
                record["error"] = f"{type(exc).__name__}: {exc}"
                return None
            completion = Completion(completion.text, completion.refused, completion.usage,
                                    time.perf_counter() - start)
            self.cache.put(key, completion)
        record.update(response=completion.text, refused=bool(completion.refused), usage=asdict(completion.usage),
                      latency_s=completion.latency_s)
        if role == "strong":
            out = self._check("strong-output", [completion.text])
            record["verdicts"] += [asdict(v) for v in out]
            if any(v.blocked for v in out):
                raise _Blocked
        return completion


class _Memo:
    """Grades memoised by (task id, answer): graders are deterministic and code tests are slow."""

    def __init__(self, grader: Grader | None = None) -> None:
        self.grader: Grader = grader if grader is not None else RuleGrader()
        self._memo: dict[tuple[str, str | None], Grade] = {}
        self._lock = threading.Lock()

    def __call__(self, task: Task, answer: str | None) -> Grade:
        key = (task.id, answer)
        with self._lock:
            if key in self._memo:
                return self._memo[key]
        result = self.grader(task, answer)
        with self._lock:
            self._memo[key] = result
        return result


def _suite_digest(suite: TaskSuite) -> str:
    """sha256 of the suite's task records: a log remembers which tasks (tokens, expected answers) it graded."""
    return hashlib.sha256(json.dumps([t.to_dict() for t in suite], sort_keys=True).encode()).hexdigest()


def _check_run_args(suite: Any, strategies: Any, seeds: Any, monitors: Any, concurrency: Any
                    ) -> tuple[list[Strategy], list[int], dict[str, list[Monitor]]]:
    if not isinstance(suite, TaskSuite) or len(suite) == 0:
        raise ValueError("suite must be a non-empty TaskSuite")
    strategies = list(strategies)
    if not strategies:
        raise ValueError("strategies must name at least one strategy")
    names = []
    for i, s in enumerate(strategies):
        if isinstance(s, str):
            raise TypeError(f"strategies[{i}] is the string {s!r}; build it with strategy_from_spec(spec, models)")
        if not isinstance(s, Strategy):
            raise TypeError(f"strategies[{i}] must be a Strategy (SingleModel, ManualDecomposition, "
                            f"AutomatedDecomposition), got {type(s).__name__}")
        names.append(s.name)
    duplicated = sorted({n for n in names if names.count(n) > 1})
    if duplicated:
        raise ValueError(f"strategy names must be unique; repeated: {duplicated}")
    seeds = list(seeds)
    if not seeds or any(isinstance(s, bool) or not isinstance(s, (int, np.integer)) or s < 0 for s in seeds):
        raise ValueError(f"seeds must be a non-empty list of non-negative ints, got {seeds!r}")
    if len(set(seeds)) != len(seeds):
        raise ValueError(f"seeds must be distinct, got {seeds!r}")
    by_placement: dict[str, list[Monitor]] = defaultdict(list)
    monitor_names = []
    for m in monitors:
        if not isinstance(m, Monitor):
            raise TypeError(f"monitors must follow the Monitor protocol, got {type(m).__name__}")
        if m.placement not in PLACEMENTS:
            raise ValueError(f"monitor {m.name!r}: placement {m.placement!r}; accepted values: {list(PLACEMENTS)}")
        by_placement[m.placement].append(m)
        monitor_names.append(m.name)
    if len(set(monitor_names)) != len(monitor_names):
        raise ValueError(f"monitor names must be unique, got {monitor_names}")
    return strategies, [int(s) for s in seeds], dict(by_placement)


def run(suite: TaskSuite, strategies: Sequence[Strategy], *, seeds: Sequence[int] = (0,),
        monitors: Sequence[Monitor] = (), concurrency: int = 1, cache_dir: str | Path | None = None,
        progress: bool = False, log_path: str | Path | None = None, max_tokens: int = 1024,
        temperature: float = 0.0, grader: Grader | None = None, max_error_share: float = 0.1,
        offline: bool = False) -> RunResult:
    """Run every task of ``suite`` through every strategy with every seed.

    Parameters
    ----------
    suite : TaskSuite
        The tasks (flagged and control).
    strategies : sequence of Strategy
        With unique names.
    seeds : sequence of int, default (0,)
        Distinct non-negative seeds; each (strategy, task) runs once per seed.
    monitors : sequence of Monitor, default ()
        Defences, each at its placement.
    concurrency : int, default 1
        Episodes run at once (threads); results do not depend on it.
    cache_dir : str or Path, optional
        Folder of the completion cache; a rerun with the same cache makes no model call.
    progress : bool, default False
        Show a progress bar.
    log_path : str or Path, optional
        The JSONL audit log (overwritten).
    max_tokens : int, default 1024
        Passed to every call.
    temperature : float, default 0.0
        Passed to every call.
    grader : Grader, optional
        Decides success (default :class:`~combo_redteam.RuleGrader`, the task's own rule; e.g.
        :class:`~combo_redteam.JudgeGrader` for an LLM judge).
    max_error_share : float, default 0.1
        Most share of a strategy's episodes that model errors may hit. An errored episode (a model error
        left no answer) is left out of the rates and counted apart; an episode answered although some of
        its calls failed (a decomposition drops a subtask whose strong call failed) stays in the rates.
        Either kind gives a warning, and a larger share of both together than this raises
        :class:`TooManyErrors` (1.0 never raises), so a dead strong backend under a decomposition
        never reads as 0% success alone.
    offline : bool, default False
        Answer every call from ``cache_dir`` (recorded by an earlier run) and call no model; a call
        missing from the cache fails (the episode errors).

    Returns
    -------
    RunResult
        Every episode and the statistics over them.

    Raises
    ------
    TooManyErrors
        When a strategy's errored share exceeds ``max_error_share`` (the result is its ``result``).

    Examples
    --------
    >>> from combo_redteam import (AutomatedDecomposition, SingleModel, StandInStrong, StandInWeak,
    ...                            benign_suite)
    >>> strong, weak = StandInStrong(capability=10), StandInWeak(capability=2)
    >>> suite = benign_suite(6, random_state=0, variants=("flagged",))
    >>> result = run(suite, [SingleModel(strong), SingleModel(weak, role="weak"),
    ...                      AutomatedDecomposition(weak, strong, k=3)])
    >>> [round(result.success_rate(s).estimate, 2) for s in ("single-strong", "single-weak", "automated-k3")]
    [0.0, 0.0, 1.0]
    >>> result.uplift("automated-k3").estimate
    1.0
    """
    check_params({"concurrency": concurrency, "max_tokens": max_tokens, "temperature": temperature,
                  "max_error_share": max_error_share, "offline": offline, "progress": progress},
                 {"concurrency": [Range(int, 1, None)], "max_tokens": [Range(int, 1, None)],
                  "temperature": [Range(float, 0, None), Range(int, 0, None)],
                  "max_error_share": [Range(float, 0, 1), Range(int, 0, 1)], "offline": ["boolean"],
                  "progress": ["boolean"]}, owner="run")
    if temperature == float("inf"):
        raise ValueError(f"run: temperature must be a finite float >= 0; got {temperature!r}")
    if grader is not None and not isinstance(grader, Grader):
        raise TypeError(f"run: grader must follow the Grader protocol (a `name` and __call__(task, answer)); got "
                        f"{type(grader).__name__}")
    if offline and cache_dir is None:
        raise ValueError("run: offline=True answers from cache_dir; give the cache_dir of a recorded run")
    strategies, seed_list, by_placement = _check_run_args(suite, strategies, seeds, monitors, concurrency)
    cache, memo = _Cache(cache_dir, offline), _Memo(grader)
    params = {"max_tokens": max_tokens, "temperature": float(temperature)}
    jobs = [(s, t, seed) for s in strategies for t in suite for seed in seed_list]
    monitor_meta = [(m.name, m.placement) for ms in by_placement.values() for m in ms]
    log = None
    lock = threading.Lock()
    call_errors: list[str] = []
    if log_path is not None:
        Path(log_path).parent.mkdir(parents=True, exist_ok=True)
        log = open(log_path, "w")  # noqa: SIM115 - closed in the finally below
        log.write(json.dumps({"type": "header", "format": LOG_FORMAT, "version": 1, "suite": suite.name,
                              "strategies": [[s.name, s.kind] for s in strategies], "seeds": seed_list,
                              "suite_digest": _suite_digest(suite), "monitors": monitor_meta, "params": params,
                              "grader": memo.grader.name,
                              "n_episodes": len(jobs)}) + "\n")

    def one(index: int) -> EpisodeResult:
        strategy, task, seed = jobs[index]
        meta = {"index": index, "strategy": strategy.name, "task_id": task.id, "pair": task.pair,
                "variant": task.variant, "family": task.family, "difficulty": task.difficulty, "seed": seed}
        episode = _Episode(meta, by_placement, cache, params)
        final: str | None
        final_verdicts: list[Verdict] = []
        try:
            final = strategy.execute(task, episode)
        except _Blocked:
            final = None
        if final is not None and not any(v["blocked"] for c in episode.calls for v in c["verdicts"]):
            final_verdicts = episode._check("final-output", [final])
        graded = memo(task, final)
        fv = [asdict(v) for v in final_verdicts]
        result = _episode_result(meta, episode.calls, final, fv, graded, episode.format_failures)
        call_errors.extend(c["error"] for c in episode.calls if c["error"] is not None)
        if log is not None:
            lines = [json.dumps(c) for c in episode.calls]
            lines.append(json.dumps({"type": "episode", **meta, "final": final, "final_verdicts": fv,
                                     "grade": asdict(graded), "format_failures": episode.format_failures,
                                     "success": result.success, "errored": result.errored}))
            with lock:
                log.write("\n".join(lines) + "\n")
        return result

    try:
        if concurrency == 1:
            episodes = [one(i) for i in progress_bar(range(len(jobs)), enabled=progress, desc="episodes")]
        else:
            with ThreadPoolExecutor(max_workers=concurrency) as pool:
                episodes = list(progress_bar(pool.map(one, range(len(jobs))), enabled=progress, desc="episodes",
                                             total=len(jobs)))
    finally:
        if log is not None:
            log.close()
    result = RunResult(tuple(episodes), tuple((s.name, s.kind) for s in strategies), tuple(seed_list),
                       tuple(monitor_meta), suite.name)
    _check_errors(result, max_error_share, call_errors)
    return result


def _check_errors(result: RunResult, max_error_share: float, call_errors: Sequence[str] = ()) -> None:
    # an episode is hit by errors when it errored (no answer) or answered without the parts whose calls failed
    # (a decomposition drops a subtask whose strong call failed): a dead strong backend must not read as 0% success
    counts: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0])
    for e in result.episodes:
        counts[e.strategy][0] += e.errored
        counts[e.strategy][1] += e.errors > 0 and not e.errored
        counts[e.strategy][2] += 1
    hit = {name: c for name, c in counts.items() if c[0] or c[1]}
    if not hit:
        return
    shown = ", ".join(f"{name} {errored}/{total}" + (f" (+{partial} answered with failed calls)" if partial else "")
                      for name, (errored, partial, total) in hit.items())
    worst = max((errored + partial) / total for errored, partial, total in hit.values())
    dropped = ("; episodes answered with failed calls (their parts dropped) stay in the rates"
               if any(partial for _, partial, _ in hit.values()) else "")
    message = (f"errored episodes (a model error left no answer), left out of the rates: {shown}{dropped}; first "
               f"error: {_first_error(result) or min(call_errors, default='')}")
    if worst > max_error_share:
        raise TooManyErrors(f"{message}; more than max_error_share={max_error_share:g} of a strategy's episodes",
                            result)
    warnings.warn(message, RuntimeWarning, stacklevel=3)


def _first_error(result: RunResult) -> str:
    return next((e.grade_detail for e in result.episodes if e.errored), "")


def replay(log_path: str | Path, suite: TaskSuite | None = None, *, grader: Grader | None = None) -> RunResult:
    """Rebuild a run's :class:`RunResult` from its audit log.

    Every episode is recomputed from its logged calls (calls, tokens, refusals, monitor verdicts) and
    final answer; with ``suite`` the final answers are graded again instead of read from the log.

    Parameters
    ----------
    log_path : str or Path
        A log written by :func:`run`.
    suite : TaskSuite, optional
        The run's suite, to re-grade the answers.
    grader : Grader, optional
        With ``suite``, the grader to re-grade with (default the task's rule grader).

    Returns
    -------
    RunResult
        Equal to the result :func:`run` returned.

    Raises
    ------
    ValueError
        When the log is not a combo-redteam log, is incomplete, or was written for another suite than ``suite``.
    """
    lines = [json.loads(line) for line in Path(log_path).read_text().splitlines() if line.strip()]
    if not lines or lines[0].get("type") != "header" or lines[0].get("format") != LOG_FORMAT:
        raise ValueError(f"{log_path}: not a combo-redteam audit log (the first line must be its header)")
    header = lines[0]
    calls: dict[int, list[dict[str, Any]]] = defaultdict(list)
    finals: dict[int, dict[str, Any]] = {}
    for line in lines[1:]:
        if line["type"] == "call":
            calls[int(line["episode"])].append(line)
        elif line["type"] == "episode":
            finals[int(line["index"])] = line
    expected = int(header.get("n_episodes", len(finals)))
    if sorted(finals) != list(range(expected)):
        missing = sorted(set(range(expected)) - set(finals))
        raise ValueError(f"{log_path}: {len(missing)} of {expected} episodes are missing (an interrupted run?), "
                         f"e.g. {missing[:5]}")
    if suite is not None and "suite_digest" in header and header["suite_digest"] != _suite_digest(suite):
        raise ValueError(f"{log_path}: the log was written for another suite than {suite.name!r} (its tasks, tokens "
                         "or expected answers differ; suites of the same size share task ids)")
    memo = _Memo(grader)
    episodes = []
    for index in range(expected):
        ep = finals[index]
        graded = memo(suite.by_id(ep["task_id"]), ep["final"]) if suite is not None else Grade(**ep["grade"])
        steps = sorted(calls[index], key=lambda c: c["step"])
        episodes.append(_episode_result(ep, steps, ep["final"], ep["final_verdicts"], graded,
                                        ep.get("format_failures", ())))
    return RunResult(tuple(episodes), tuple((n, k) for n, k in header["strategies"]), tuple(header["seeds"]),
                     tuple((n, p) for n, p in header["monitors"]), header["suite"])
