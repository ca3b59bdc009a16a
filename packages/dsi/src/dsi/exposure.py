"""Expected canary exposure of DSI's one-round release at a fixed training setting.

One run of :func:`dsi.applications.memorization_mitigation` measures exposure on a single noise draw,
and the 8-canary mean of one draw varies by about 1 bit between draws (studies/exposure.md). With one
round the release is ``theta0 + Delta + c * N(0, Sigma)``, where ``Delta`` (the full-batch update),
the differences and so ``Sigma`` do not depend on the noise. The expected exposure (over the mechanism's
noise, for this seed's data) is then estimated by applying fresh draws of ``c * N(0, Sigma)`` to the same
``Delta``: that is exactly the law of what :class:`dsi.DSITrainer` releases.

The data are those of the reproduce task's memorisation setup (digits, MLP 64-64-10 tanh, 20 %
validation held out, ``n_canaries`` random 8x8 canaries x ``canary_repeats`` copies, each canary ranked
against ``n_references`` never-inserted candidates from the same distribution), drawn with the same
random stream as ``memorization_mitigation``. The scripts of ``studies/exposure`` build on these
functions.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
from icml25_shared.random import check_random_state, int_seed
from icml25_shared.validation import Interval, check_params

from dsi.applications import (
    MemorizationData,
    TaskConfig,
    _accuracy,
    _memorization_data,
    _mlp,
    _stream,
    canary_exposure,
)
from dsi.covariance import OptimalCovariance, optimal_covariance
from dsi.training import DSITrainer, require_torch

__all__ = [
    "ExpectedExposure",
    "MemorizationData",
    "OneRound",
    "candidate_exposures",
    "expected_exposure",
    "memorization_data",
    "train_one_round",
]


def memorization_data(
    random_state: int = 0,
    *,
    n_canaries: int = 8,
    canary_repeats: int = 4,
    n_references: int = 1023,
    validation: float = 0.2,
) -> MemorizationData:
    """The memorisation data of the reproduce task.

    Parameters
    ----------
    random_state : int, default 0
        The task's seed; the draws are those of ``memorization_mitigation(random_state=...)`` with
        ``TaskConfig(validation=validation)``.
    n_canaries, canary_repeats, n_references : int
        Canaries inserted, copies of each, never-inserted candidates per canary.
    validation : float, default 0.2
        Share of the training split held out.

    Returns
    -------
    MemorizationData
        Training data with the canaries, their groups, the candidates and the evaluation splits.
    """
    check_params(
        {"random_state": random_state, "n_canaries": n_canaries, "canary_repeats": canary_repeats,
         "n_references": n_references, "validation": validation},
        {"random_state": ["random_state"], "n_canaries": [Interval(int, 1, None)],
         "canary_repeats": [Interval(int, 1, None)], "n_references": [Interval(int, 1, None)],
         "validation": [Interval(float, 0, 1, closed="left")]},
        owner="memorization_data",
    )
    seed = int_seed(random_state)
    cfg = replace(TaskConfig(), validation=validation)
    return _memorization_data(
        seed, cfg, n_canaries=n_canaries, canary_repeats=canary_repeats, n_references=n_references
    )


def candidate_exposures(model: Any, data: MemorizationData) -> tuple[np.ndarray, np.ndarray]:
    """Exposure of every inserted canary under ``model``.

    Parameters
    ----------
    model : torch.nn.Module
        The released model.
    data : MemorizationData
        The canaries and their candidates.

    Returns
    -------
    exposures : numpy.ndarray of shape (n_canaries,)
        Exposure of each inserted canary in bits.
    losses : numpy.ndarray of shape (n_canaries, n_references + 1)
        Candidate losses, the inserted canary first in each row.
    """
    torch = require_torch()
    with torch.no_grad():
        out = model(torch.as_tensor(data.cand_x, dtype=torch.float32))
        loss = torch.nn.functional.cross_entropy(out, torch.as_tensor(data.cand_y), reduction="none")
    rows = loss.double().numpy().reshape(data.n_canaries, data.n_references + 1)
    return np.array([canary_exposure(r[0], r[1:]) for r in rows]), rows


@dataclass
class OneRound:
    """One DSI round trained on ``data``.

    The trainer (its model holds the trainer's own release), the
    initial parameters ``theta0``, the unprivatised update ``update`` (= Delta), the leave-one-group-out
    ``differences``, the noise multiplier ``c`` and the covariance ``Sigma`` (budgets 1) the trainer used.
    ``release(noise)`` loads ``theta0 + Delta + noise`` into ``model``.
    """

    data: MemorizationData
    trainer: DSITrainer
    theta0: np.ndarray
    update: np.ndarray
    differences: np.ndarray
    noise_multiplier: float
    covariance: OptimalCovariance
    model: Any = field(repr=False)

    def release(self, noise: np.ndarray | float = 0.0) -> Any:
        """Load ``theta0 + Delta + noise`` into ``model`` and return it.

        Parameters
        ----------
        noise : numpy.ndarray of shape (d,) or float, default 0.0
            The noise added to the update.

        Returns
        -------
        torch.nn.Module
            ``model``, holding the released parameters.
        """
        torch = require_torch()
        params = [p for p in self.model.parameters() if p.requires_grad]
        vec = torch.as_tensor(self.theta0 + self.update + noise, dtype=torch.float32)
        torch.nn.utils.vector_to_parameters(vec, params)
        return self.model

    def draw_noise(self, rng: np.random.Generator) -> np.ndarray:
        """One draw of ``c * N(0, Sigma)``, the trainer's noise law.

        Parameters
        ----------
        rng : numpy.random.Generator
            Source of the draw (advanced).

        Returns
        -------
        numpy.ndarray of shape (d,)
            The noise.
        """
        return self.noise_multiplier * self.covariance.sample(rng)


def train_one_round(
    data: MemorizationData,
    random_state: int,
    epsilon: float,
    *,
    lr: float = 0.5,
    local_steps: int = 150,
) -> OneRound:
    """Train the MLP with :class:`DSITrainer` for one round of full-batch SGD.

    Parameters
    ----------
    data : MemorizationData
        The training data (:func:`memorization_data`).
    random_state : int
        Seeds the MLP's initialisation and the trainer's noise.
    epsilon : float
        Per-canary epsilon at ``data.config.delta`` (``gdp`` accountant).
    lr : float, default 0.5
        SGD learning rate.
    local_steps : int, default 150
        SGD steps of the round.

    Returns
    -------
    OneRound
        The trained round.
    """
    check_params(
        {"random_state": random_state, "epsilon": epsilon, "lr": lr, "local_steps": local_steps},
        {"random_state": ["random_state"], "epsilon": [Interval(float, 0, None, closed="neither")],
         "lr": [Interval(float, 0, None, closed="neither")], "local_steps": [Interval(int, 1, None)]},
        owner="train_one_round",
    )
    seed = int_seed(random_state)
    torch = require_torch()
    cfg = data.config
    model = _mlp(data.x.shape[1], cfg.hidden, 10, seed)
    params = [p for p in model.parameters() if p.requires_grad]
    theta0 = torch.nn.utils.parameters_to_vector(params).detach().double().numpy().copy()
    trainer = DSITrainer(
        model,
        optimizer="sgd",
        lr=lr,
        local_steps=local_steps,
        rounds=1,
        delta=cfg.delta,
        epsilon=epsilon,
        random_state=seed,
        accountant="gdp",
    )
    trainer.fit(torch.as_tensor(data.x, dtype=torch.float32), torch.as_tensor(data.y), data.groups)
    diffs = trainer.last_differences_
    cov = optimal_covariance(diffs, 1.0)
    return OneRound(data, trainer, theta0, trainer.last_update_, diffs, float(trainer.noise_multiplier_), cov, model)


@dataclass(frozen=True)
class ExpectedExposure:
    """Exposure (bits) and test accuracy of DSI's one-round release, over ``draws`` noise draws.

    ``exposure`` is the expected exposure: the mean over draws and canaries; ``exposure_se`` its standard
    error over draws; ``per_draw`` the 8-canary mean of each draw (what one training run would report);
    ``per_canary`` the mean over draws of each canary. ``trainer_*`` is the trainer's own release (one
    draw, the one ``memorization_mitigation`` would measure at this setting); ``no_noise_*`` is
    ``theta0 + Delta`` (plain SGD at the same setting).
    """

    seed: int
    epsilon: float
    draws: int
    noise_multiplier: float
    exposure: float
    exposure_se: float
    per_draw: np.ndarray = field(repr=False)
    per_canary: np.ndarray = field(repr=False)
    test_accuracy: float
    test_accuracy_per_draw: np.ndarray = field(repr=False)
    trainer_exposure: float
    trainer_test_accuracy: float
    no_noise_exposure: float
    no_noise_test_accuracy: float
    update: np.ndarray = field(repr=False)


def expected_exposure(
    random_state: int,
    epsilon: float,
    draws: int,
    *,
    lr: float = 0.5,
    local_steps: int = 150,
    noise_random_state: Any = None,
    data: MemorizationData | None = None,
) -> ExpectedExposure:
    """Expected canary exposure of DSI's one-round release on ``seed``'s data at (epsilon, delta).

    Trains one round (:func:`train_one_round`), then releases ``theta0 + Delta + c z_k`` for ``draws``
    independent ``z_k ~ N(0, Sigma)``. Sigma, Delta and the noise stream do not depend on epsilon, so
    different epsilons of one seed share the same ``z_k`` scaled by their own ``c`` (common random
    numbers: the differences between epsilons are paired).

    Parameters
    ----------
    random_state : int
        The task's seed (data, initialisation, the trainer's own draw).
    epsilon : float
        Per-canary epsilon at ``delta = data.config.delta``.
    draws : int
        Number of noise draws (at least 2).
    lr : float, default 0.5
        SGD learning rate.
    local_steps : int, default 150
        SGD steps of the round.
    noise_random_state : None, int or numpy.random.Generator, optional
        Source of the ``z_k``; by default the ``"exposure-noise"`` stream of ``random_state`` (a child of
        ``SeedSequence(random_state)``, independent of every other seed's streams).
    data : MemorizationData, optional
        Defaults to :func:`memorization_data` for ``random_state``.

    Returns
    -------
    ExpectedExposure
        Expected exposure, its standard error and the per-draw values.
    """
    check_params(
        {"random_state": random_state, "draws": draws, "noise_random_state": noise_random_state},
        {"random_state": ["random_state"], "draws": [Interval(int, 2, None)],
         "noise_random_state": [None, "random_state"]},
        owner="expected_exposure",
    )
    seed = int_seed(random_state)
    data = data if data is not None else memorization_data(seed)
    rnd = train_one_round(data, seed, epsilon, lr=lr, local_steps=local_steps)
    trainer_exp, _ = candidate_exposures(rnd.model, data)
    trainer_acc = _accuracy(rnd.model, data.x_test, data.y_test)
    gen = _stream(seed, "exposure-noise") if noise_random_state is None else check_random_state(noise_random_state)
    exps, accs = [], []
    for _ in range(draws):
        model = rnd.release(rnd.draw_noise(gen))
        exps.append(candidate_exposures(model, data)[0])
        accs.append(_accuracy(model, data.x_test, data.y_test))
    model = rnd.release(0.0)
    none_exp, _ = candidate_exposures(model, data)
    none_acc = _accuracy(model, data.x_test, data.y_test)
    exps_arr = np.array(exps)
    per_draw = exps_arr.mean(axis=1)
    return ExpectedExposure(
        seed=seed,
        epsilon=float(epsilon),
        draws=draws,
        noise_multiplier=rnd.noise_multiplier,
        exposure=float(exps_arr.mean()),
        exposure_se=float(per_draw.std(ddof=1) / np.sqrt(draws)),
        per_draw=per_draw,
        per_canary=exps_arr.mean(axis=0),
        test_accuracy=float(np.mean(accs)),
        test_accuracy_per_draw=np.array(accs),
        trainer_exposure=float(trainer_exp.mean()),
        trainer_test_accuracy=trainer_acc,
        no_noise_exposure=float(none_exp.mean()),
        no_noise_test_accuracy=none_acc,
        update=rnd.update,
    )
