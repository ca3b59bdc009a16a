"""Retrosynthesis planning around a user-supplied one-step model (the interface Retro* uses for RS).

DEG and FMG report RS, the share of generated molecules for which Retro* (Chen et al., ICML 2020) finds a
route to purchasable building blocks. Retro* needs a trained one-step model and a building-block set
that are not shipped here; ``RetroPlanner`` takes both from the user. Its search is best-first over
partial routes with reaction cost ``-log p`` (or a cost the model returns) and no learned value
function, so it returns a route of least total cost, as Retro* with a zero value estimate (Retro*-0).
``fmg.evaluate(..., planner=RetroPlanner(...))`` reports its solved share as ``rs``; without a planner
only the SA-score proxy ``rs_proxy`` is available.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from fmg.chem import canonical_smiles

__all__ = ["OneStepModel", "RetroPlanner", "Route"]

OneStepModel = Callable[[str], Sequence[tuple[Sequence[str], float]]]
"""A one-step retrosynthesis model: product SMILES -> ``[(reactant SMILES, probability or cost), ...]``."""


def _canon(smiles: str, what: str) -> str:
    c = canonical_smiles(smiles) if isinstance(smiles, str) and smiles else None
    if c is None:
        raise ValueError(f"{what} {smiles!r}: RDKit cannot parse it")
    return c


@dataclass(frozen=True)
class Route:
    """A synthesis route found by ``RetroPlanner``.

    Attributes
    ----------
    target : str
        Canonical SMILES of the planned molecule.
    reactions : tuple of (str, tuple of str, float)
        ``(product, reactants, cost)`` of each retrosynthetic step, in the order they were chosen.
    cost : float
        Sum of the step costs.
    """

    target: str
    reactions: tuple[tuple[str, tuple[str, ...], float], ...]
    cost: float

    @property
    def starting_materials(self) -> set[str]:
        """Reactants of the route that no step of it makes (building blocks)."""
        made = {p for p, _, _ in self.reactions}
        used = {r for _, rs, _ in self.reactions for r in rs}
        return (used - made) if self.reactions else {self.target}


class RetroPlanner:
    """Least-cost route search over a one-step retrosynthesis model (Retro*-0 style).

    Parameters
    ----------
    one_step : callable
        ``one_step(smiles) -> [(reactants, score), ...]``: candidate reactant sets of a product, best
        first (they are sorted by cost here before ``top_k`` keeps the cheapest). ``score`` is a probability in (0, 1] (``scores="probability"``, cost ``-log p``) or a cost
        >= 0 (``scores="cost"``).
    building_blocks : iterable of str
        Purchasable molecules: a route is complete when every open molecule is one of them.
    max_iterations : int, default 500
        Expansions per target (Retro*'s iteration budget): each expands one open molecule of one partial
        route; the model is called once per distinct molecule, so at most this many calls. A route
        completed by the expansions made is returned even when the budget is spent.
    max_depth : int, default 10
        Longest chain of steps from the target.
    top_k : int, default 10
        Candidate reactant sets kept per call.
    scores : {"probability", "cost"}, default "probability"

    Examples
    --------
    >>> from fmg.retro import RetroPlanner
    >>> reactions = {"CCOC(C)=O": [(("CC(=O)O", "CCO"), 0.9)]}
    >>> planner = RetroPlanner(lambda s: reactions.get(s, []), ["CC(=O)O", "CCO"])
    >>> route = planner.plan("CC(=O)OCC")
    >>> sorted(route.starting_materials), round(route.cost, 4)
    (['CC(=O)O', 'CCO'], 0.1054)
    """

    def __init__(self, one_step: OneStepModel, building_blocks: Iterable[str], *, max_iterations: int = 500,
                 max_depth: int = 10, top_k: int = 10, scores: str = "probability") -> None:
        if not callable(one_step):
            raise TypeError(f"one_step must be callable, got {type(one_step).__name__}")
        for name, value in (("max_iterations", max_iterations), ("max_depth", max_depth), ("top_k", top_k)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive int, got {value!r}")
        if scores not in ("probability", "cost"):
            raise ValueError(f"scores must be 'probability' or 'cost', got {scores!r}")
        if isinstance(building_blocks, str):  # would be read as one building block per character
            raise ValueError(f"building_blocks must be an iterable of SMILES, not the single string "
                             f"{building_blocks!r}")
        self.one_step = one_step
        self.building_blocks = frozenset(_canon(s, f"building block {i}") for i, s in enumerate(building_blocks))
        self.max_iterations = max_iterations
        self.max_depth = max_depth
        self.top_k = top_k
        self.scores = scores

    def _expand(self, product: str) -> list[tuple[tuple[str, ...], float]]:
        out = []
        answer = self.one_step(product)
        if answer is None or isinstance(answer, str | bytes):
            raise ValueError(f"one_step({product!r}) returned {answer!r}; expected a list of (reactants, score)")
        for k, item in enumerate(list(answer)):
            try:
                reactants, score = item
                score = float(score)
            except (TypeError, ValueError):
                raise ValueError(f"one_step({product!r}) answer {k} is {item!r}; expected (reactants, score)") \
                    from None
            if isinstance(reactants, str) or not reactants:
                raise ValueError(f"one_step({product!r}) answer {k}: reactants must be a non-empty sequence of "
                                 f"SMILES, got {reactants!r}")
            if self.scores == "probability":
                if not 0 < score <= 1:
                    raise ValueError(f"one_step({product!r}) answer {k}: probability {score!r} not in (0, 1]")
                cost = -math.log(score)
            else:
                if not (math.isfinite(score) and score >= 0):
                    raise ValueError(f"one_step({product!r}) answer {k}: cost {score!r} is not a finite number "
                                     ">= 0")
                cost = score
            out.append((tuple(_canon(r, f"one_step({product!r}) answer {k}: reactant") for r in reactants), cost))
        # the top_k cheapest, whatever order the model lists them in (stable: ties keep the model's order)
        return sorted(out, key=lambda x: x[1])[: self.top_k]

    def plan(self, smiles: str) -> Route | None:
        """The least-cost route of ``smiles`` within the budget, or None when none is found.

        Parameters
        ----------
        smiles : str
            Target molecule.

        Returns
        -------
        Route or None
        """
        target = _canon(smiles, "target")
        # a state: open molecules, each with its depth and the molecules above it (no cycles)
        start: tuple[tuple[str, int, frozenset[str]], ...] = ((target, 0, frozenset()),)
        heap: list[tuple[float, int, tuple, tuple]] = [(0.0, 0, start, ())]
        cache: dict[str, list[tuple[tuple[str, ...], float]]] = {}
        tie = 1
        expansions = 0
        while heap:
            cost, _, open_, steps = heapq.heappop(heap)
            open_ = tuple(m for m in open_ if m[0] not in self.building_blocks)
            if not open_:
                return Route(target, steps, cost)
            product, depth, above = open_[0]
            # budget spent: no more expansions, but a complete route already in the heap is still returned
            if depth >= self.max_depth or expansions >= self.max_iterations:
                continue
            expansions += 1
            if product not in cache:
                cache[product] = self._expand(product)
            for reactants, step_cost in cache[product]:
                if product in reactants or any(r in above for r in reactants):
                    continue
                new_open = open_[1:] + tuple((r, depth + 1, above | {product}) for r in reactants)
                heapq.heappush(heap, (cost + step_cost, tie, new_open, steps + ((product, reactants, step_cost),)))
                tie += 1
        return None

    def success_rate(self, smiles: Sequence[str]) -> float:
        """Share of ``smiles`` with a route (RS)."""
        if isinstance(smiles, str):
            raise ValueError("success_rate takes a sequence of SMILES, not a single string")
        if len(smiles) == 0:
            raise ValueError("smiles is empty")
        return sum(self.plan(s) is not None for s in smiles) / len(smiles)
