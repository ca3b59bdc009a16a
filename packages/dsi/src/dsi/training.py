"""`DSITrainer`: privatise what any torch optimizer does to a model against leave-one-group-out differences.

Each round starts from the current (released) parameters theta. The black-box optimizer runs
``local_steps`` steps from a fresh state on the whole data, giving the outcome update Delta; it runs
again with each protected group j left out, giving Delta_{-j}. The differences s_j = Delta - Delta_{-j}
fix the optimal covariance Sigma, and the released parameters are theta + Delta + c * N(0, Sigma) with c
calibrated so that ``rounds`` releases are (epsilon, delta) for every group (zCDP composition). This is
the paper's "full mode" recipe; the optimizer state is reset every round so nothing unreleased carries
over between rounds.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, cast

import numpy as np
from icml25_shared.random import check_random_state
from icml25_shared.validation import Interval, Options, check_params

from dsi._validation import as_numpy
from dsi.accounting import epsilon_from_sigma
from dsi.mechanism import calibrate_multiplier, noise_covariance

__all__ = ["DSITrainer", "RoundRecord", "backward", "require_torch"]

log = logging.getLogger(__name__)


def require_torch() -> Any:
    """Import torch, or raise an ImportError that names the extra to install.

    Returns
    -------
    module
        The ``torch`` module.
    """
    try:
        import torch
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError(
            "DSITrainer and the applications need torch; install it with `pip install dsi[train]`"
        ) from exc
    return torch


def backward(model: Any, loss_fn: Callable[[Any, Any], Any], x: Any, y: Any, max_grad_norm: float | None) -> float:
    """Set ``p.grad`` of the model's trainable parameters to the mean loss gradient on (x, y).

    With ``max_grad_norm`` every per-sample gradient is first clipped to that norm (as the paper's code
    does through opacus).

    Parameters
    ----------
    model : torch.nn.Module
        The model whose trainable parameters get gradients.
    loss_fn : callable
        ``loss_fn(outputs, targets)`` returning the mean loss.
    x, y : torch.Tensor
        Inputs and targets of one batch.
    max_grad_norm : float or None
        Per-sample clipping norm; None for no clipping.

    Returns
    -------
    float
        The mean loss on (x, y).
    """
    torch = require_torch()
    if max_grad_norm is None:
        loss = loss_fn(model(x), y)
        loss.backward()
        return float(loss.detach())
    from torch.func import functional_call, grad, vmap

    named = [(n, p) for n, p in model.named_parameters() if p.requires_grad]
    names = [n for n, _ in named]

    def one(values: tuple[Any, ...], xi: Any, yi: Any) -> Any:
        out = functional_call(model, dict(zip(names, values, strict=True)), (xi.unsqueeze(0),))
        return loss_fn(out, yi.unsqueeze(0))

    values = tuple(p.detach() for _, p in named)
    grads = vmap(grad(one), in_dims=(None, 0, 0))(values, x, y)
    norms = torch.sqrt(sum(g.reshape(len(x), -1).pow(2).sum(1) for g in grads))
    scale = torch.clamp(max_grad_norm / (norms + 1e-12), max=1.0)
    for (_, p), g in zip(named, grads, strict=True):
        p.grad = (g * scale.view(-1, *([1] * (g.dim() - 1)))).mean(0)
    with torch.no_grad():
        return float(loss_fn(model(x), y))


@dataclass(frozen=True)
class RoundRecord:
    """What one privatised round did.

    Attributes
    ----------
    round : int
        0-based round index.
    loss : float
        Training loss of the full-data run's first local step (before the update).
    n_differences : int
        Number of protected groups with a non-zero difference in the round.
    rank : int
        Dimension of the span the noise lives in.
    noise_trace : float
        c^2 tr(Sigma), the expected squared norm of the noise added.
    update_norm : float
        ||Delta||, the norm of the unprivatised update.
    max_difference_norm : float
        max_j ||s_j||.
    solver_iterations : int
        Iterations of the covariance solver (0 for isotropic noise).
    residual_norm : float
        max_j of the norm of s_j outside the span the solver optimised (0 for isotropic noise); that part
        gets its own noise, so every group's loss on the full difference meets its budget.
    residual_trace : float
        c^2 times the trace of the noise added on that part.
    solver_converged : bool
        Whether the solver certified its duality gap (True for isotropic noise).
    """

    round: int
    loss: float
    n_differences: int
    rank: int
    noise_trace: float
    update_norm: float
    max_difference_norm: float
    solver_iterations: int
    residual_norm: float = 0.0
    residual_trace: float = 0.0
    solver_converged: bool = True


class DSITrainer:
    """Train a torch model with DSI noise on each round's update, for any optimizer (SGD, Adam, ...).

    Threat model: the protected groups (data sources, inserted canaries, suspected poisons) are named by
    ``groups``; for each group j, the released parameter sequence on D and on D without group j are
    (epsilon, delta)-indistinguishable in the DSI sense (the noise covariance is computed from D and
    treated as public, as in the paper). Because Sigma is shaped by each group's own difference, the
    counterfactual release still carries noise along "fit group j"; tests that compare group j with fresh
    look-alikes (e.g. canary exposure) are not bounded by this guarantee. Samples with group id -1 are
    not protected. Model buffers (e.g. BatchNorm statistics) are not released: they are restored after
    every local run.

    Parameters
    ----------
    model : torch.nn.Module
        Trained in place.
    loss_fn : callable, optional
        ``loss_fn(outputs, targets)`` returning the mean loss (default: cross-entropy).
    optimizer : {"sgd", "adam"} or callable, default "sgd"
        Or a callable ``params -> torch.optim.Optimizer`` (a fresh one each run).
    lr : float, default 0.1
        Learning rate for "sgd" / "adam".
    local_steps : int, default 1
        Optimizer steps per round (each on a mini-batch when ``batch_size`` is set).
    batch_size : int, optional
        Mini-batch size within a round (None: full batch). Batches are shared by all runs of a round,
        minus the left-out group's samples.
    rounds : int, default 10
        Number of privatised releases the budget is spread over.
    epsilon : float, optional
        The guarantee per group over all rounds at ``delta`` (give this or ``noise_multiplier``; see
        :class:`dsi.Mechanism`).
    delta : float, default 1e-5
        Target delta in (0, 1).
    noise_multiplier : float, optional
        An explicit per-round multiplier instead of ``epsilon``.
    noise : {"dsi", "isotropic"}, default "dsi"
        Optimal covariance, or sigma^2 I with the same guarantee.
    budgets : float or array-like, default 1.0
        Scalar or one per protected group (sorted group ids), squared-Mahalanobis budgets.
    method : {"mirror-ascent", "sdp"}, default "mirror-ascent"
        Covariance solver.
    tol : float, default 1e-5
        Solver tolerance.
    random_state : None, int or numpy.random.Generator, optional
        Source of the noise and of the mini-batch order.
    progress : bool, default False
        Show a tqdm bar over rounds.
    accountant : {"zcdp", "gdp", "rdp", "prv"}, default "zcdp"
        The paper's conversion, exact Gaussian-DP composition (tighter), Renyi DP of the (subsampled)
        Gaussian, or opacus's PRV accountant (see :mod:`dsi.accounting`).
    max_grad_norm : float, optional
        Clip every per-sample gradient to this norm inside the local runs (the paper's code clips through
        opacus); it bounds how far any one sample, and so any group, moves the update, which shrinks the
        differences and the noise. None: no clipping.
    residual : {"noise", "raise"}, default "noise"
        The part of a difference outside the span the solver optimises gets its own noise so that the
        budget holds on the full difference ("noise"), or the round raises a ValueError ("raise"); each
        round's ``residual_norm`` is recorded in ``history_``.
    sample_rate : float, default 1.0
        Fraction q of the protected groups each round sees (samples with group id -1 are always used).
        Below 1 the accounting amplifies by subsampling; it needs ``accountant="rdp"`` or ``"prv"``.
    sampling : {"poisson", "fixed"}, default "poisson"
        "poisson": every group joins a round independently with probability q; "fixed": each round
        draws round(q * n_groups) groups without replacement (``accountant="rdp"`` only).

    Attributes
    ----------
    history_ : list of RoundRecord
        One record per round.
    noise_multiplier_ : float
        The per-round multiplier c.
    epsilon_ : numpy.ndarray
        Epsilon per protected group over all rounds at ``delta``, with the subsampling amplification when
        ``sample_rate`` < 1.
    sample_rate_ : float
        The probability that a group is in a round's sample (round(q * n_groups) / n_groups for "fixed").
    groups_ : numpy.ndarray
        The protected group ids.
    last_update_ : numpy.ndarray of shape (d,)
        The final round's unprivatised update (for audits).
    last_differences_ : numpy.ndarray of shape (n, d)
        The final round's leave-one-group-out differences (for audits).

    Examples
    --------
    >>> import numpy as np, torch
    >>> import dsi
    >>> g = torch.Generator().manual_seed(0)
    >>> X, y = torch.randn(64, 5, generator=g), torch.randint(0, 2, (64,), generator=g)
    >>> model = torch.nn.Linear(5, 2)
    >>> trainer = dsi.DSITrainer(model, lr=0.5, local_steps=2, rounds=3, epsilon=4.0, random_state=0)
    >>> trainer = trainer.fit(X, y, groups=np.repeat(np.arange(8), 8))
    >>> len(trainer.history_), round(float(trainer.epsilon_.max()), 6)
    (3, 4.0)
    """

    def __init__(
        self,
        model: Any,
        loss_fn: Callable[[Any, Any], Any] | None = None,
        *,
        optimizer: str | Callable[[Any], Any] = "sgd",
        lr: float = 0.1,
        local_steps: int = 1,
        batch_size: int | None = None,
        rounds: int = 10,
        epsilon: float | None = None,
        delta: float = 1e-5,
        noise_multiplier: float | None = None,
        noise: str = "dsi",
        budgets: Any = 1.0,
        method: str = "mirror-ascent",
        tol: float = 1e-5,
        random_state: Any = None,
        progress: bool = False,
        accountant: str = "zcdp",
        max_grad_norm: float | None = None,
        residual: str = "noise",
        sample_rate: float = 1.0,
        sampling: str = "poisson",
    ) -> None:
        self.model = model
        self.loss_fn = loss_fn
        self.optimizer = optimizer
        self.lr = lr
        self.local_steps = local_steps
        self.batch_size = batch_size
        self.rounds = rounds
        self.epsilon = epsilon
        self.delta = delta
        self.noise_multiplier = noise_multiplier
        self.noise = noise
        self.budgets = budgets
        self.method = method
        self.tol = tol
        self.random_state = random_state
        self.progress = progress
        self.accountant = accountant
        self.max_grad_norm = max_grad_norm
        self.residual = residual
        self.sample_rate = sample_rate
        self.sampling = sampling

    # -- validation -------------------------------------------------------------------------------
    def _setup(self, x: Any, y: Any, groups: Any) -> tuple[Any, Any, np.ndarray]:
        torch = require_torch()
        if not isinstance(self.model, torch.nn.Module):
            raise TypeError(f"model must be a torch.nn.Module, got {type(self.model).__name__}")
        positive = [Interval(float, 0, math.inf, closed="neither")]
        check_params(
            {k: getattr(self, k) for k in ("rounds", "local_steps", "delta", "optimizer", "lr", "max_grad_norm",
                                           "residual", "batch_size", "sample_rate", "sampling", "noise", "method",
                                           "accountant", "tol", "progress", "random_state")},
            {"rounds": [Interval(int, 1, None)], "local_steps": [Interval(int, 1, None)],
             "delta": [Interval(float, 0, 1, closed="neither")],
             "optimizer": [Options(str, {"sgd", "adam"}), "callable"], "lr": positive,
             "max_grad_norm": [None, *positive], "residual": [Options(str, {"noise", "raise"})],
             "batch_size": [None, Interval(int, 1, None)], "sample_rate": [Interval(float, 0, 1, closed="right")],
             "sampling": [Options(str, {"poisson", "fixed"})], "noise": [Options(str, {"dsi", "isotropic"})],
             "method": [Options(str, {"mirror-ascent", "sdp"})],
             "accountant": [Options(str, {"zcdp", "gdp", "rdp", "prv"})], "tol": positive, "progress": ["boolean"],
             "random_state": ["random_state"]},
            owner="DSITrainer",
        )
        rounds = int(self.rounds)
        x = torch.as_tensor(x) if not isinstance(x, torch.Tensor) else x
        y = torch.as_tensor(y) if not isinstance(y, torch.Tensor) else y
        g = np.asarray(as_numpy(groups, name="groups")).ravel()
        if not np.issubdtype(g.dtype, np.integer):
            raise TypeError(f"groups must hold integer group ids (-1 for unprotected samples), got dtype {g.dtype}")
        if len(x) != len(y) or len(x) != len(g):
            raise ValueError(f"X, y and groups must have the same length, got {len(x)}, {len(y)} and {len(g)}")
        if np.any(g < -1):
            raise ValueError("group ids must be >= 0 for protected groups or -1 for unprotected samples")
        ids = np.unique(g[g >= 0])
        if ids.size == 0:
            raise ValueError("groups names no protected group (all ids are -1); nothing to protect")
        budgets = np.asarray(self.budgets, dtype=np.float64)
        if budgets.ndim == 0:
            budgets = np.full(ids.size, float(budgets))
        if budgets.shape != (ids.size,) or not np.all(np.isfinite(budgets)) or np.any(budgets <= 0):
            raise ValueError(
                f"budgets must be a positive scalar or one positive value per protected group "
                f"({ids.size} groups: ids {ids[:10].tolist()}...), got shape {budgets.shape}"
            )
        self.groups_ = ids
        self._budgets = budgets
        q = float(self.sample_rate)
        self._n_fixed = max(1, int(round(q * ids.size)))
        self.sample_rate_ = self._n_fixed / ids.size if self.sampling == "fixed" and q < 1.0 else q
        kw: dict[str, Any] = {"sample_rate": self.sample_rate_, "sampling": self.sampling}
        self.noise_multiplier_ = calibrate_multiplier(
            self.epsilon, self.noise_multiplier, self.delta, rounds, self.accountant, **kw
        )
        per_budget = {
            b: epsilon_from_sigma(
                self.noise_multiplier_, self.delta, steps=rounds, budget=b, accountant=self.accountant, **kw
            )
            for b in np.unique(budgets).tolist()
        }
        self.epsilon_ = np.array([per_budget[b] for b in budgets.tolist()])
        self._rng = check_random_state(self.random_state)
        self._torch_gen = torch.Generator().manual_seed(int(self._rng.integers(2**62)))
        self.history_: list[RoundRecord] = []
        return x, y, g

    def _make_optimizer(self, params: list[Any]) -> Any:
        torch = require_torch()
        if self.optimizer == "sgd":
            return torch.optim.SGD(params, lr=self.lr)
        if self.optimizer == "adam":
            return torch.optim.Adam(params, lr=self.lr)
        make = cast(Callable[[Any], Any], self.optimizer)  # validated in _setup: a callable here
        return make(params)

    # -- one round --------------------------------------------------------------------------------
    def _local_run(self, theta0: Any, x: Any, y: Any, batches: list[np.ndarray]) -> tuple[Any, float]:
        """Run the optimizer from theta0 over ``batches`` (index arrays); return (update, first loss)."""
        torch = require_torch()
        from torch.nn.utils import parameters_to_vector, vector_to_parameters

        params = [p for p in self.model.parameters() if p.requires_grad]
        buffers = [b.detach().clone() for b in self.model.buffers()]
        with torch.no_grad():
            vector_to_parameters(theta0.clone(), params)
        opt = self._make_optimizer(params)
        loss_fn = self.loss_fn or torch.nn.functional.cross_entropy
        first = float("nan")
        for step, idx in enumerate(batches):
            if idx.size == 0:
                continue
            index = torch.as_tensor(idx)
            opt.zero_grad(set_to_none=True)
            loss = backward(self.model, loss_fn, x[index], y[index], self.max_grad_norm)
            opt.step()
            if step == 0:
                first = loss
        with torch.no_grad():
            for b, saved in zip(self.model.buffers(), buffers, strict=True):
                b.copy_(saved)
            return parameters_to_vector(params).detach() - theta0, first

    def _batches(self, n: int) -> list[np.ndarray]:
        if self.batch_size is None:
            return [np.arange(n)] * self.local_steps
        out = []
        perm = self._rng.permutation(n)
        pos = 0
        for _ in range(self.local_steps):
            if pos + self.batch_size > n:
                perm, pos = self._rng.permutation(n), 0
            out.append(np.sort(perm[pos : pos + self.batch_size]))
            pos += self.batch_size
        return out

    def _round(self, x: Any, y: Any, g: np.ndarray) -> RoundRecord:
        torch = require_torch()
        from torch.nn.utils import parameters_to_vector, vector_to_parameters

        params = [p for p in self.model.parameters() if p.requires_grad]
        theta0 = parameters_to_vector(params).detach().clone()
        if self.sample_rate_ < 1.0:  # the sample of protected groups (unprotected samples are always in)
            if self.sampling == "poisson":
                chosen = self.groups_[self._rng.random(self.groups_.size) < self.sample_rate_]
            else:
                chosen = self._rng.choice(self.groups_, size=self._n_fixed, replace=False)
            active = np.flatnonzero(np.isin(g, chosen) | (g < 0))
            batches = [active[b] for b in self._batches(len(active))]
        else:
            batches = self._batches(len(g))
        full, loss = self._local_run(theta0, x, y, batches)
        diffs, budgets = [], []
        for gid, budget in zip(self.groups_, self._budgets, strict=True):
            loo = [b[g[b] != gid] for b in batches]
            if all(len(a) == len(b) for a, b in zip(loo, batches, strict=True)):
                continue  # the group is absent from every batch: its difference is exactly zero
            update, _ = self._local_run(theta0, x, y, loo)
            diff = (full - update).double().cpu().numpy()
            if np.any(diff != 0):
                diffs.append(diff)
                budgets.append(budget)
        self.last_differences_ = np.stack(diffs) if diffs else np.zeros((0, full.numel()))
        self.last_update_ = full.double().cpu().numpy()
        released = full.clone()
        rank, trace, iters, max_norm, res_norm, res_trace, solved = 0, 0.0, 0, 0.0, 0.0, 0.0, True
        if diffs:
            stack = self.last_differences_
            cov = noise_covariance(
                stack, np.array(budgets), self.noise, method=self.method, tol=self.tol, residual=self.residual
            )
            noise = self.noise_multiplier_ * cov.sample(self._rng)
            released += torch.as_tensor(noise, dtype=full.dtype, device=full.device)
            rank = cov.rank
            trace = self.noise_multiplier_**2 * cov.trace
            iters = getattr(cov, "iterations", 0)
            res_norm = float(getattr(cov, "residual_norm", 0.0))
            res_trace = self.noise_multiplier_**2 * float(getattr(cov, "residual_trace", 0.0))
            solved = bool(getattr(cov, "converged", True))
            if res_norm > 0:
                log.info(
                    "round %d: differences reach %.3g outside the solved span; covered by its own noise",
                    len(self.history_),
                    res_norm,
                )
            max_norm = float(np.sqrt(np.max(np.sum(stack**2, axis=1))))
        with torch.no_grad():
            vector_to_parameters(theta0 + released, params)
        rec = RoundRecord(
            round=len(self.history_),
            loss=loss,
            n_differences=len(diffs),
            rank=rank,
            noise_trace=float(trace),
            update_norm=float(torch.linalg.vector_norm(full)),
            max_difference_norm=max_norm,
            solver_iterations=int(iters),
            residual_norm=res_norm,
            residual_trace=float(res_trace),
            solver_converged=solved,
        )
        self.history_.append(rec)
        log.debug("round %d: %s", rec.round, rec)
        return rec

    def fit(self, X: Any, y: Any, groups: Any) -> DSITrainer:
        """Run ``rounds`` privatised rounds on (X, y).

        Parameters
        ----------
        X : array-like or torch.Tensor of shape (N, ...)
            Inputs.
        y : array-like or torch.Tensor of shape (N,)
            Targets.
        groups : array-like of int, shape (N,)
            Each sample's protected group id; -1 for unprotected samples.

        Returns
        -------
        DSITrainer
            ``self``, with the model trained in place.
        """
        from icml25_shared.cli import progress

        x, yy, g = self._setup(X, y, groups)
        self.model.train()
        for _ in progress(range(self.rounds), enabled=self.progress, desc="DSI rounds", total=self.rounds):
            self._round(x, yy, g)
        return self
