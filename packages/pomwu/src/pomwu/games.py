"""Games whose payoffs depend on a context: two-player normal-form games and routing games.

Both expose losses (to be minimised), in the units the learners consume.
"""

from __future__ import annotations

import csv
import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import numpy as np

__all__ = [
    "MatrixGame",
    "random_zero_sum_games",
    "RoutingNetwork",
    "RoutingGame",
    "read_network_csv",
    "read_od_matrix",
    "load_sioux_falls",
    "load_sioux_falls_demands",
    "context_capacities",
]


# ---------------------------------------------------------------------------------------------
# Normal-form games
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class MatrixGame:
    """A two-player game per context, given by loss matrices.

    ``row_losses[z, i, j]`` is the row player's loss when she plays ``i`` and the column player
    ``j`` in context ``z``; ``col_losses`` likewise for the column player. Zero-sum when
    ``col_losses == -row_losses`` (build with :meth:`zero_sum`).
    """

    row_losses: np.ndarray
    col_losses: np.ndarray

    def __post_init__(self) -> None:
        a, b = np.asarray(self.row_losses, float), np.asarray(self.col_losses, float)
        if a.ndim == 2:
            a, b = a[None], b[None]
        if a.ndim != 3 or a.shape != b.shape:
            raise ValueError(
                f"row_losses and col_losses must both be (n_contexts, n_rows, n_cols); got {np.shape(self.row_losses)} and {np.shape(self.col_losses)}"
            )
        object.__setattr__(self, "row_losses", a)
        object.__setattr__(self, "col_losses", b)

    @classmethod
    def zero_sum(cls, row_losses: np.ndarray) -> MatrixGame:
        """Zero-sum game: the column player's loss is minus the row player's."""
        a = np.asarray(row_losses, float)
        return cls(a, -a)

    @property
    def n_contexts(self) -> int:
        """Number of contexts (games)."""
        return self.row_losses.shape[0]

    @property
    def is_zero_sum(self) -> bool:
        """Whether the column player's losses are the negated row losses in every context."""
        return bool(np.allclose(self.row_losses, -self.col_losses))

    def loss_vectors(self, x: np.ndarray, y: np.ndarray, context: int) -> tuple[np.ndarray, np.ndarray]:
        """Expected loss of each pure action against the opponent's mixed strategy.

        Returns ``(A[z] @ y, B[z].T @ x)``: shapes ``(n_rows,)`` and ``(n_cols,)``.
        """
        return self.row_losses[context] @ y, self.col_losses[context].T @ x

    def loss_range(self) -> float:
        """Largest spread ``max - min`` of either player's losses (to rescale into [0, 1])."""
        return float(max(np.ptp(self.row_losses), np.ptp(self.col_losses)))


def random_zero_sum_games(n_contexts: int, n_rows: int = 3, n_cols: int = 3, *, rng: np.random.Generator) -> MatrixGame:
    """Zero-sum games with i.i.d. U[0, 1] row losses, one per context."""
    return MatrixGame.zero_sum(rng.random((n_contexts, n_rows, n_cols)))


# ---------------------------------------------------------------------------------------------
# Road networks
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class RoutingNetwork:
    """A directed road network with BPR link costs ``t_e(x) = t0_e * (1 + b_e * (x / c_e) ** p_e)``.

    Arrays have one entry per link (shape ``(n_links,)``); nodes are ints. Flows and capacities
    share one unit (vehicles per hour in the TNTP files, divided by 100 by :func:`load_sioux_falls`),
    travel times are in the unit of ``free_flow_time`` (minutes for Sioux Falls).
    """

    init_node: np.ndarray
    term_node: np.ndarray
    free_flow_time: np.ndarray
    capacity: np.ndarray
    b: np.ndarray
    power: np.ndarray
    length: np.ndarray

    def __post_init__(self) -> None:
        n = np.asarray(self.init_node).size
        for name in ("term_node", "free_flow_time", "capacity", "b", "power", "length"):
            if np.asarray(getattr(self, name)).shape != (n,):
                raise ValueError(f"{name} must have shape ({n},) like init_node, got {np.shape(getattr(self, name))}")
        if np.any(np.asarray(self.capacity) <= 0):
            raise ValueError("every link capacity must be > 0")
        if np.any(np.asarray(self.free_flow_time) < 0):
            raise ValueError("free-flow times must be >= 0")

    @property
    def n_links(self) -> int:
        """Number of directed links."""
        return int(np.asarray(self.init_node).size)

    def link_index(self) -> dict[tuple[int, int], int]:
        """``{(u, v): link id}``."""
        return {(int(u), int(v)): e for e, (u, v) in enumerate(zip(self.init_node, self.term_node, strict=False))}

    def to_networkx(self, weight: str = "length"):
        """A ``networkx.DiGraph`` with attributes ``length``, ``free_flow_time`` and ``link`` (id)."""
        import networkx as nx

        g = nx.DiGraph()
        for e, (u, v) in enumerate(zip(self.init_node, self.term_node, strict=False)):
            g.add_edge(
                int(u), int(v), length=float(self.length[e]), free_flow_time=float(self.free_flow_time[e]), link=e
            )
        return g

    def link_costs(self, flows: np.ndarray, capacity: np.ndarray | None = None) -> np.ndarray:
        """BPR travel time of every link at ``flows`` (``(..., n_links)``)."""
        c = self.capacity if capacity is None else capacity
        return self.free_flow_time * (1.0 + self.b * (flows / c) ** self.power)

    def link_cost_integrals(self, flows: np.ndarray, capacity: np.ndarray | None = None) -> np.ndarray:
        """``∫_0^x t_e(s) ds`` per link (the Beckmann potential's terms)."""
        c = self.capacity if capacity is None else capacity
        p = self.power
        return self.free_flow_time * (flows + self.b * flows ** (p + 1) / ((p + 1) * c**p))


REQUIRED_COLUMNS = ("Init_node", "Term_node", "Capacity", "Free_Flow_Time", "B", "Power")


def read_network_csv(path: str | Path) -> RoutingNetwork:
    """Read a TNTP-style link CSV into a :class:`RoutingNetwork`.

    The columns ``Init_node, Term_node, Capacity, Free_Flow_Time, B, Power`` are required and
    ``Length`` is optional; extra columns are ignored.
    """
    with open(path, newline="") as fh:
        rows = list(csv.DictReader(fh))
    if not rows:
        raise ValueError(f"{path}: no links found")
    cols = {k.strip() for k in rows[0] if k is not None}
    missing = [c for c in REQUIRED_COLUMNS if c not in cols]
    if missing:
        raise ValueError(
            f"{path}: missing link attribute column(s) {missing}; required columns are {list(REQUIRED_COLUMNS)}"
        )

    def column(name: str, dtype: type = float) -> np.ndarray:
        out = []
        for i, r in enumerate(rows):
            value = {k.strip(): v for k, v in r.items() if k is not None}.get(name)
            if value is None or value.strip() == "":
                raise ValueError(f"{path}: link {i} (row {i + 2}) has no value for '{name}'")
            out.append(dtype(float(value)))
        return np.asarray(out)

    length = column("Length") if "Length" in cols else column("Free_Flow_Time")
    return RoutingNetwork(
        column("Init_node", int),
        column("Term_node", int),
        column("Free_Flow_Time"),
        column("Capacity"),
        column("B"),
        column("Power"),
        length,
    )


def read_od_matrix(path: str | Path) -> np.ndarray:
    """Read a comma-separated square origin-destination demand matrix (row = origin, node 1 first)."""
    with open(path) as fh:
        rows = [[float(v) for v in line.strip().split(",")] for line in fh if line.strip()]
    od = np.asarray(rows)
    if od.ndim != 2 or od.shape[0] != od.shape[1]:
        raise ValueError(f"{path}: OD matrix must be square, got shape {od.shape}")
    if np.any(od < 0):
        raise ValueError(f"{path}: OD demands must be >= 0")
    return od


def _data_file(name: str):
    return resources.files("pomwu") / "data" / name


def load_sioux_falls(*, scale: float = 100.0) -> RoutingNetwork:
    """The Sioux Falls network (LeBlanc et al., 1975): 24 nodes, 76 links, shipped with the package.

    Capacities are divided by ``scale`` (Sessa et al., 2020 use 100, matching the demands of
    :func:`load_sioux_falls_demands`). See DATA.md for provenance and licence.
    """
    with resources.as_file(_data_file("SiouxFalls_net.csv")) as path:
        net = read_network_csv(path)
    return RoutingNetwork(
        net.init_node, net.term_node, net.free_flow_time, net.capacity / scale, net.b, net.power, net.length
    )


def load_sioux_falls_demands(*, scale: float = 100.0) -> np.ndarray:
    """The 24 x 24 Sioux Falls OD matrix divided by ``scale`` (total 360,600 trips -> 3,606)."""
    with resources.as_file(_data_file("SiouxFalls_OD_matrix.txt")) as path:
        return read_od_matrix(path) / scale


def context_capacities(
    network: RoutingNetwork, n_contexts: int, *, low: float = 0.7, high: float = 1.2, rng: np.random.Generator
) -> np.ndarray:
    """Capacity vector per context: the nominal capacities scaled elementwise by U[low, high].

    Shape ``(n_contexts, n_links)``; the Sessa et al. (2020) setup uses U[0.7, 1.2].
    """
    if not 0 < low <= high:
        raise ValueError(f"need 0 < low <= high, got low={low}, high={high}")
    return network.capacity[None, :] * rng.uniform(low, high, size=(n_contexts, network.n_links))


# ---------------------------------------------------------------------------------------------
# Routing games
# ---------------------------------------------------------------------------------------------
class RoutingGame:
    """An atomic routing game: agent ``j`` sends its demand ``d_j`` along one of its candidate paths.

    Parameters
    ----------
    network : RoutingNetwork
    paths : list of list of list of int
        ``paths[j][k]`` is the list of link ids of agent ``j``'s ``k``-th path.
    demands : array (n_agents,)
        Demand of each agent (in the capacity unit).
    capacities : array (n_contexts, n_links), optional
        Capacity per context; default one context with the nominal capacities.

    Notes
    -----
    Build the paper's setup with :meth:`from_od_matrix`.
    """

    def __init__(
        self,
        network: RoutingNetwork,
        paths: Sequence[Sequence[Sequence[int]]],
        demands: np.ndarray,
        capacities: np.ndarray | None = None,
    ) -> None:
        demands = np.asarray(demands, dtype=np.float64)
        if demands.shape != (len(paths),):
            raise ValueError(f"demands must have shape ({len(paths)},) (one per agent), got {demands.shape}")
        if np.any(demands <= 0):
            raise ValueError("every agent's demand must be > 0")
        caps = network.capacity[None, :] if capacities is None else np.asarray(capacities, dtype=np.float64)
        if caps.ndim != 2 or caps.shape[1] != network.n_links or np.any(caps <= 0):
            raise ValueError(
                f"capacities must be a positive (n_contexts, {network.n_links}) array, got shape {caps.shape}"
            )
        counts = np.array([len(p) for p in paths])
        if np.any(counts == 0):
            raise ValueError(f"agent {int(np.argmin(counts))} has no path")
        self.network, self.paths, self.demands, self.capacities = network, paths, demands, caps
        self.n_actions = counts
        n, k, n_links = len(paths), int(counts.max()), network.n_links
        self.incidence = np.zeros((n, k, n_links), dtype=bool)
        for j, agent_paths in enumerate(paths):
            for a, path in enumerate(agent_paths):
                links = np.asarray(path, dtype=np.int64)
                if links.size == 0 or links.min() < 0 or links.max() >= n_links:
                    raise ValueError(f"path {a} of agent {j} must be a non-empty list of link ids in [0, {n_links})")
                self.incidence[j, a, links] = True
        # (agent, action, link) triples: the sparse form used every round.
        self._tj, self._tk, self._te = np.nonzero(self.incidence)
        self._flat = self._tj * k + self._tk
        # unique (agent, link) pairs, for expected (mixed-strategy) flows
        pair_keys, self._pair = np.unique(self._tj * n_links + self._te, return_inverse=True)
        self._pair_j, self._pair_e = pair_keys // n_links, pair_keys % n_links
        # BPR as t0 + coef * x**p per (agent, path, link) triple, coef = t0 * b / c**p per context
        te = self._te
        self._t0 = network.free_flow_time[te]
        self._coef = (network.free_flow_time * network.b / caps**network.power)[:, te]
        powers = np.unique(network.power)
        self._power = float(powers[0]) if powers.size == 1 else None
        self._powers = network.power[te]
        # incidence[j, a, e] as a flat gather: _inc_flat[_inc_base + a * n_links]
        self._inc_flat = self.incidence.ravel()
        self._inc_base = self._tj * (k * n_links) + te
        self._d_t = demands[self._tj]
        self.mask = np.arange(k)[None, :] < counts[:, None]

    # -- construction --------------------------------------------------------------------------
    @classmethod
    def from_od_matrix(
        cls,
        network: RoutingNetwork,
        od: np.ndarray,
        *,
        n_paths: int = 5,
        max_ratio: float = 3.0,
        capacities: np.ndarray | None = None,
    ) -> RoutingGame:
        """Build the routing game of an OD matrix.

        One agent per OD pair with positive demand; its actions are the ``n_paths`` shortest paths
        by link length (networkx ``shortest_simple_paths``), keeping a path only if its free-flow time
        is below ``max_ratio`` times that of the shortest (the Sessa et al., 2020 rule).
        """
        import networkx as nx

        if isinstance(n_paths, bool) or not isinstance(n_paths, (int, np.integer)) or n_paths < 1:
            raise ValueError(f"n_paths must be a positive int (paths kept per OD pair), got {n_paths!r}")
        if not np.isfinite(max_ratio) or max_ratio < 1:
            raise ValueError(
                f"max_ratio must be >= 1 (free-flow time relative to the shortest path), got {max_ratio!r}"
            )
        od = np.asarray(od, dtype=np.float64)
        g = network.to_networkx()
        nodes = sorted(g.nodes)
        if od.shape != (len(nodes), len(nodes)):
            raise ValueError(f"OD matrix must be {len(nodes)} x {len(nodes)} for this network, got {od.shape}")
        paths, demands = [], []
        for (i, o), (jj, d) in itertools.product(enumerate(nodes), enumerate(nodes)):
            if od[i, jj] <= 0 or o == d:
                continue
            agent: list[list[int]] = []
            base = None
            if not nx.has_path(g, o, d):
                raise ValueError(f"OD pair ({o}, {d}) has demand {od[i, jj]:g} but no path in the network")
            for node_path in itertools.islice(nx.shortest_simple_paths(g, o, d, weight="length"), n_paths):
                links = [g.edges[u, v]["link"] for u, v in zip(node_path[:-1], node_path[1:], strict=False)]
                fft = float(network.free_flow_time[links].sum())
                if base is None:
                    base = fft
                elif fft >= max_ratio * base:
                    continue
                agent.append(links)
            paths.append(agent)
            demands.append(od[i, jj])
        return cls(network, paths, np.asarray(demands), capacities)

    @property
    def n_agents(self) -> int:
        """Number of agents (OD pairs with positive demand)."""
        return len(self.paths)

    @property
    def n_contexts(self) -> int:
        """Number of capacity contexts."""
        return self.capacities.shape[0]

    def _path_costs_at(self, x_cf: np.ndarray, context: int) -> np.ndarray:
        """Sum per (agent, path) of BPR costs at per-triple link flows ``x_cf``; ``(n_agents, max_actions)``."""
        if self._power == 4.0:  # the BPR default: two squarings instead of pow
            xp = x_cf * x_cf
            xp *= xp
        else:
            xp = x_cf ** (self._powers if self._power is None else self._power)
        cost = self._t0 + self._coef[context] * xp
        n, k = self.mask.shape
        return np.bincount(self._flat, weights=cost, minlength=n * k).reshape(n, k)

    def _capacity(self, context: int) -> np.ndarray:
        if (
            isinstance(context, bool)
            or not isinstance(context, (int, np.integer))
            or not 0 <= context < self.n_contexts
        ):
            raise ValueError(f"context {context!r} is outside the declared set {{0, ..., {self.n_contexts - 1}}}")
        return self.capacities[context]

    # -- per-round quantities --------------------------------------------------------------------
    def sample_actions(self, strategies: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """Draw one path per agent from mixed strategies ``(n_agents, max_actions)``; returns ``(n_agents,)``."""
        u = rng.random(self.n_agents)
        a = (np.cumsum(strategies, axis=1) < u[:, None]).sum(axis=1)
        return np.minimum(a, self.n_actions - 1)

    def link_flows(self, actions: np.ndarray) -> np.ndarray:
        """Total flow on each link when agent ``j`` uses path ``actions[j]``; ``(n_links,)``."""
        used = self._tk == actions[self._tj]
        return np.bincount(self._te[used], weights=self._d_t[used], minlength=self.network.n_links)

    def path_flows_to_link_flows(self, path_flows: np.ndarray) -> np.ndarray:
        """Link flows ``(n_links,)`` for path flows ``(n_agents, max_actions)`` (splittable routing)."""
        return np.bincount(self._te, weights=path_flows[self._tj, self._tk], minlength=self.network.n_links)

    def path_costs(self, link_costs: np.ndarray) -> np.ndarray:
        """Travel time of every candidate path at fixed link costs; ``(n_agents, max_actions)`` (0 where padded)."""
        n, k = self.mask.shape
        return np.bincount(self._flat, weights=link_costs[self._te], minlength=n * k).reshape(n, k)

    def travel_times(self, actions: np.ndarray, context: int) -> np.ndarray:
        """Each agent's travel time ``(n_agents,)`` at the joint action ``actions``."""
        cost = self.network.link_costs(self.link_flows(actions), self._capacity(context))
        return self.path_costs(cost)[np.arange(self.n_agents), actions]

    def counterfactual_times(self, actions: np.ndarray, context: int, flows: np.ndarray | None = None) -> np.ndarray:
        """Travel time agent ``j`` would have had on each of its paths, others fixed.

        Shape ``(n_agents, max_actions)`` (0 where padded): the full-information loss vector.
        Costs ``O(sum_j sum_k |path_jk|)`` per call.
        """
        self._capacity(context)
        x = self.link_flows(actions) if flows is None else flows
        on = self._inc_flat[self._inc_base + actions[self._tj] * self.network.n_links]
        return self._path_costs_at(x[self._te] + np.where(on, 0.0, self._d_t), context)

    def _link_use_probability(self, strategies: np.ndarray) -> np.ndarray:
        """Probability that agent j's path uses link e, per unique (agent, link) pair."""
        if strategies.shape != self.mask.shape:
            raise ValueError(
                f"strategies must have shape {self.mask.shape} (n_agents, max_actions), got {strategies.shape}"
            )
        return np.bincount(self._pair, weights=strategies.ravel()[self._flat], minlength=self._pair_j.size)

    def expected_link_flows(self, strategies: np.ndarray) -> np.ndarray:
        """Expected link flows ``(n_links,)`` when agents play mixed strategies ``(n_agents, max_actions)``."""
        use = self._link_use_probability(strategies)
        return np.bincount(self._pair_e, weights=use * self.demands[self._pair_j], minlength=self.network.n_links)

    def expected_counterfactual_times(self, strategies: np.ndarray, context: int) -> np.ndarray:
        """Travel time of each of agent j's paths at the others' *expected* flows (mean-field feedback).

        Shape ``(n_agents, max_actions)``; deterministic given the strategies. Evaluates BPR costs at
        expected flows (not expected costs), the smooth feedback of splittable / nonatomic routing.
        """
        self._capacity(context)
        use = self._link_use_probability(strategies)
        x = np.bincount(self._pair_e, weights=use * self.demands[self._pair_j], minlength=self.network.n_links)
        return self._path_costs_at(x[self._te] + self._d_t * (1.0 - use[self._pair]), context)

    def congestion(self, flows: np.ndarray, context: int) -> float:
        """Mean over links of the BPR delay ratio ``b * (x / c) ** p`` (Sessa et al.'s congestion)."""
        net = self.network
        return float(np.mean(net.b * (flows / self._capacity(context)) ** net.power))

    def loss_bounds(self, n_samples: int = 100, *, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        """Per-agent ``(min, max)`` travel time over ``n_samples`` random joint actions and contexts.

        Used to rescale travel times into [0, 1] as Sessa et al. (2020) do (with a 0.01 margin).
        """
        lo = np.full(self.n_agents, np.inf)
        hi = np.full(self.n_agents, -np.inf)
        for _ in range(n_samples):
            actions = (rng.random(self.n_agents) * self.n_actions).astype(np.int64)
            t = self.travel_times(actions, int(rng.integers(self.n_contexts)))
            lo, hi = np.minimum(lo, t - 0.01), np.maximum(hi, t + 0.01)
        return lo, hi
