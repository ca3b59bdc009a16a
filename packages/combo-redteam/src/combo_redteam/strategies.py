"""Strategies: how one task is sent through one or several models.

``SingleModel`` sends the full task to one model. ``ManualDecomposition`` runs a fixed plan of steps,
each bound to a registered model and a prompt template (by default the strong model solves the benign
problem and the weak model adds the marker). ``AutomatedDecomposition`` lets the weak model propose
``k`` related benign subtasks, has the strong model answer them and lets the weak model solve the task
with the (subtask, answer) pairs in context.
"""

from __future__ import annotations

import re
import string
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from icml25_shared.validation import Interval, check_param

from combo_redteam.extract import parse_subtasks
from combo_redteam.models import ChatModel, Completion
from combo_redteam.prompts import (
    MANUAL_SOLVE_TEMPLATE,
    PROPOSE_TEMPLATE,
    REFERENCE_BLOCK,
    SINGLE_TEMPLATE,
    SOLVE_TEMPLATE,
)
from combo_redteam.tasks import Task

__all__ = ["AutomatedDecomposition", "ManualDecomposition", "PlanStep", "ROLES", "SingleModel", "Strategy",
           "parse_subtasks", "strategy_from_spec"]

ROLES = ("strong", "weak")
"""Roles a model can play in a strategy (monitors are placed by role)."""

TASK_FIELDS = ("task", "problem", "marker")
"""Template fields every step can use: the full task, its benign problem and its marker instruction."""


class Caller(Protocol):
    """What a strategy receives from the runner: ``call(role, model, prompt)``."""

    def call(self, role: str, model: ChatModel, prompt: str) -> Completion | None:
        """Send ``prompt`` to ``model`` (monitors, cache and log applied); None when the call failed."""
        ...

    def format_failure(self, reason: str) -> None:
        """Record that a reply could not be read (e.g. no subtasks in a proposal); the episode reports it."""
        ...


@runtime_checkable
class Strategy(Protocol):
    """A way to run one task: ``name``, ``kind`` (single, manual or automated), ``models`` and ``execute``."""

    name: str
    kind: str

    def models(self) -> dict[str, ChatModel]:
        """The models it uses, by role."""
        ...

    def execute(self, task: Task, caller: Caller) -> str | None:
        """Run the task; return the final answer (None when there is none)."""
        ...


def _check_model(model: Any, what: str) -> ChatModel:
    if not isinstance(model, ChatModel):
        raise TypeError(f"{what} must be a ChatModel (a `name` and a `complete` method), got {type(model).__name__}")
    return model


def _check_role(role: Any, what: str) -> str:
    if role not in ROLES:
        raise ValueError(f"{what}: role {role!r} is not accepted; accepted values: {list(ROLES)}")
    return role


def _fields(template: str) -> list[str]:
    return [f for _, f, _, _ in string.Formatter().parse(template) if f is not None]


def _task_fields(task: Task) -> dict[str, str]:
    return {"task": task.prompt, "problem": task.problem, "marker": task.flag["instruction"] if task.flag else ""}


class SingleModel:
    """Send the full task to one model.

    Parameters
    ----------
    model : ChatModel
        The model.
    role : str, default "strong"
        ``strong`` or ``weak`` (decides which monitors see the call).
    template : str, default SINGLE_TEMPLATE
        Prompt template with fields from ``task``, ``problem``, ``marker``.
    name : str, optional
        Defaults to ``single-<role>``.
    """

    kind = "single"

    def __init__(self, model: ChatModel, *, role: str = "strong", template: str = SINGLE_TEMPLATE,
                 name: str | None = None) -> None:
        self.model = _check_model(model, "model")
        self.role = _check_role(role, "SingleModel")
        unknown = [f for f in _fields(template) if f not in TASK_FIELDS]
        if unknown:
            raise ValueError(f"template field {unknown[0]!r} is not accepted; accepted fields: {list(TASK_FIELDS)}")
        self.template = template
        self.name = name or f"single-{role}"

    def models(self) -> dict[str, ChatModel]:
        """``{role: model}``."""
        return {self.role: self.model}

    def execute(self, task: Task, caller: Caller) -> str | None:
        """One call with the full task."""
        reply = caller.call(self.role, self.model, self.template.format(**_task_fields(task)))
        return None if reply is None else reply.text


@dataclass(frozen=True)
class PlanStep:
    """One step of a manual plan.

    Attributes
    ----------
    model : str
        Key of a model registered with the plan.
    template : str
        Prompt template; fields: ``task``, ``problem``, ``marker`` and the outputs of earlier steps.
    output : str
        Name under which the reply is available to later steps; the last step's reply is the answer.
    role : str, optional
        ``strong`` or ``weak``; defaults to ``model`` when that is a role name.
    """

    model: str
    template: str
    output: str
    role: str | None = None


class ManualDecomposition:
    """Run a fixed plan of steps, each bound to a registered model and a prompt template.

    Parameters
    ----------
    plan : sequence of PlanStep
        The steps, in order.
    models : mapping of str to ChatModel
        The registered models; every step's ``model`` must be a key.
    name : str, default "manual"
        The strategy's name.

    Examples
    --------
    >>> from combo_redteam import StandInStrong, StandInWeak
    >>> manual = ManualDecomposition.default(StandInStrong(), StandInWeak())
    >>> [(s.model, s.output) for s in manual.plan]
    [('strong', 'solution'), ('weak', 'final')]
    """

    kind = "manual"

    def __init__(self, plan: Sequence[PlanStep], *, models: Mapping[str, ChatModel], name: str = "manual") -> None:
        if not isinstance(models, Mapping) or not models:
            raise ValueError("models must be a non-empty mapping of name to ChatModel")
        for key, model in models.items():
            _check_model(model, f"models[{key!r}]")
        if not plan:
            raise ValueError("plan must have at least one step")
        available = list(TASK_FIELDS)
        steps = []
        for i, step in enumerate(plan, 1):
            if not isinstance(step, PlanStep):
                raise TypeError(f"plan step {i} must be a PlanStep, got {type(step).__name__}")
            if step.model not in models:
                raise ValueError(f"plan step {i}: field 'model' is {step.model!r}, which is not registered; "
                                 f"registered models: {sorted(models)}")
            role = step.role if step.role is not None else step.model
            _check_role(role, f"plan step {i} (model {step.model!r}; give role='strong' or 'weak')")
            unknown = [f for f in _fields(step.template) if f not in available]
            if unknown:
                raise ValueError(f"plan step {i}: template field {unknown[0]!r} is not accepted; accepted fields: "
                                 f"{available}")
            if not re.fullmatch(r"[A-Za-z_]\w*", step.output) or step.output in available:
                raise ValueError(f"plan step {i}: field 'output' is {step.output!r}; it must be an identifier not in "
                                 f"{available}")
            available.append(step.output)
            steps.append(PlanStep(step.model, step.template, step.output, role))
        self.plan = tuple(steps)
        self.registry = dict(models)
        self.name = name

    @classmethod
    def default(cls, strong: ChatModel, weak: ChatModel, *, name: str = "manual") -> ManualDecomposition:
        """The natural split: the strong model solves the benign problem, the weak model adds the marker."""
        plan = [PlanStep("strong", "{problem}", "solution"), PlanStep("weak", MANUAL_SOLVE_TEMPLATE, "final")]
        return cls(plan, models={"strong": strong, "weak": weak}, name=name)

    def models(self) -> dict[str, ChatModel]:
        """Models by role (the first model bound to each role)."""
        out: dict[str, ChatModel] = {}
        for step in self.plan:
            out.setdefault(str(step.role), self.registry[step.model])
        return out

    def execute(self, task: Task, caller: Caller) -> str | None:
        """Run the plan's steps in order; a failed step ends the episode without an answer."""
        values = _task_fields(task)
        reply: Completion | None = None
        for step in self.plan:
            reply = caller.call(str(step.role), self.registry[step.model], step.template.format(**values))
            if reply is None:
                return None
            values[step.output] = reply.text
        return None if reply is None else reply.text


class AutomatedDecomposition:
    """Weak proposes ``k`` related benign subtasks, strong answers them, weak solves with the pairs in context.

    Parameters
    ----------
    weak : ChatModel
        Proposes subtasks and writes the final answer.
    strong : ChatModel
        Answers the subtasks.
    k : int
        Subtasks requested (>= 1).
    propose_template, solve_template, reference_block : str
        Prompt templates (defaults in :mod:`combo_redteam.prompts`).
    name : str, optional
        Defaults to ``automated-k<k>``.
    """

    kind = "automated"

    def __init__(self, weak: ChatModel, strong: ChatModel, k: int, *, propose_template: str = PROPOSE_TEMPLATE,
                 solve_template: str = SOLVE_TEMPLATE, reference_block: str = REFERENCE_BLOCK,
                 name: str | None = None) -> None:
        self.weak, self.strong = _check_model(weak, "weak"), _check_model(strong, "strong")
        check_param("k", k, [Interval(int, 1, None)], owner="AutomatedDecomposition")
        for label, template, allowed in (("propose_template", propose_template, [*TASK_FIELDS, "k"]),
                                         ("solve_template", solve_template, [*TASK_FIELDS, "references"]),
                                         ("reference_block", reference_block, ["problem", "answer"])):
            unknown = [f for f in _fields(template) if f not in allowed]
            if unknown:
                raise ValueError(f"{label} field {unknown[0]!r} is not accepted; accepted fields: {allowed}")
        self.k = k
        self.propose_template, self.solve_template, self.reference_block = (propose_template, solve_template,
                                                                            reference_block)
        self.name = name or f"automated-k{k}"

    def models(self) -> dict[str, ChatModel]:
        """``{"strong": strong, "weak": weak}``."""
        return {"strong": self.strong, "weak": self.weak}

    def execute(self, task: Task, caller: Caller) -> str | None:
        """Propose, answer (refused or failed subtasks are dropped), then solve with the pairs in context."""
        fields = _task_fields(task)
        proposal = caller.call("weak", self.weak, self.propose_template.format(k=self.k, **fields))
        if proposal is None or proposal.refused:
            return None
        blocks = []
        subtasks = parse_subtasks(proposal.text, self.k)
        if not subtasks:
            report = getattr(caller, "format_failure", None)
            if report is not None:
                report("proposal: no subtasks found")
        for subtask in subtasks:
            answer = caller.call("strong", self.strong, subtask)
            if answer is not None and not answer.refused:
                blocks.append(self.reference_block.format(problem=subtask, answer=answer.text))
        final = caller.call("weak", self.weak, self.solve_template.format(references="\n\n".join(blocks), **fields))
        return None if final is None else final.text


def strategy_from_spec(spec: str, models: Mapping[str, ChatModel]) -> SingleModel | ManualDecomposition | AutomatedDecomposition:
    """Build a strategy from a short spec: ``single:<model>``, ``manual`` or ``automated:<k>``.

    Parameters
    ----------
    spec : str
        The spec; ``manual`` and ``automated`` use the models registered as ``strong`` and ``weak``.
    models : mapping of str to ChatModel
        Registered models; for ``single:<name>`` the role is ``weak`` when the name is ``weak``.

    Returns
    -------
    Strategy
        The strategy.

    Raises
    ------
    ValueError
        For an unknown kind, an unknown model or a bad ``k``, naming the accepted values.

    Examples
    --------
    >>> from combo_redteam import StandInStrong, StandInWeak
    >>> strategy_from_spec("automated:3", {"strong": StandInStrong(), "weak": StandInWeak()}).name
    'automated-k3'
    """
    accepted = "single:<model>, manual, automated:<k>"
    kind, _, arg = str(spec).partition(":")
    if kind == "single":
        if arg not in models:
            raise ValueError(f"strategy {spec!r}: unknown model {arg!r}; registered models: {sorted(models)}")
        return SingleModel(models[arg], role="weak" if arg == "weak" else "strong", name=f"single-{arg}")
    if kind in ("manual", "automated"):
        missing = [r for r in ROLES if r not in models]
        if missing:
            raise ValueError(f"strategy {spec!r} needs models registered as {list(ROLES)}; missing {missing}; "
                             f"registered models: {sorted(models)}")
        if kind == "manual":
            if arg:
                raise ValueError(f"strategy {spec!r}: 'manual' takes no argument; accepted specs: {accepted}")
            return ManualDecomposition.default(models["strong"], models["weak"])
        if not re.fullmatch(r"\d+", arg) or int(arg) < 1:
            raise ValueError(f"strategy {spec!r}: k must be an int >= 1, got {arg!r}")
        return AutomatedDecomposition(models["weak"], models["strong"], int(arg))
    raise ValueError(f"unknown strategy {spec!r}; accepted specs: {accepted}")
