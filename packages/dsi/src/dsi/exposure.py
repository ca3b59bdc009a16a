"""Expected canary exposure of DSI's one-round release at a fixed training setting (issue #10, item 5).

One run of :func:`dsi.applications.memorization_mitigation` measures exposure on a single noise draw,
and the 8-canary mean of one draw varies by about 1 bit between draws (README, diagnosis). With one
round the release is ``theta0 + Delta + c * N(0, Sigma)``, where ``Delta`` (the full-batch update),
the differences and so ``Sigma`` do not depend on the noise. The expected exposure (over the mechanism's
noise, for this seed's data) is then estimated by applying fresh draws of ``c * N(0, Sigma)`` to the same
``Delta``: that is exactly the law of what :class:`dsi.DSITrainer` releases.

The data are those of the reproduce task's memorisation setup (digits, MLP 64-64-10 tanh, 20 %
validation held out, ``n_canaries`` random 8x8 canaries x ``canary_repeats`` copies, each canary ranked
against ``n_references`` never-inserted candidates from the same distribution), drawn with the same
random stream as ``memorization_mitigation``. ``benchmarks/item5_diagnosis.py`` and
``benchmarks/item5_exposure_fixed.py`` both build on these functions.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from dsi._validation import check_positive
from dsi.applications import MemorizationData, TaskConfig, _accuracy, _memorization_data, _mlp, canary_exposure
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
    seed: int, *, n_canaries: int = 8, canary_repeats: int = 4, n_references: int = 1023, validation: float = 0.2
) -> MemorizationData:
    """The memorisation data of the reproduce task for ``seed`` (same random draws as
    ``memorization_mitigation`` with ``TaskConfig(validation=validation)``)."""
    cfg = replace(TaskConfig(), validation=validation)
    return _memorization_data(
        seed, cfg, n_canaries=n_canaries, canary_repeats=canary_repeats, n_references=n_references
    )


def candidate_exposures(model: Any, data: MemorizationData) -> tuple[np.ndarray, np.ndarray]:
    """(exposure of each inserted canary in bits, the (n_canaries, n_references + 1) candidate losses)."""
    torch = require_torch()
    with torch.no_grad():
        out = model(torch.as_tensor(data.cand_x, dtype=torch.float32))
        loss = torch.nn.functional.cross_entropy(out, torch.as_tensor(data.cand_y), reduction="none")
    rows = loss.double().numpy().reshape(data.n_canaries, data.n_references + 1)
    return np.array([canary_exposure(r[0], r[1:]) for r in rows]), rows


@dataclass
class OneRound:
    """One DSI round trained on ``data``: the trainer (its model holds the trainer's own release), the
    initial parameters ``theta0``, the unprivatised update ``update`` (= Delta), the leave-one-group-out
    ``differences``, the noise multiplier ``c`` and the covariance ``Sigma`` (budgets 1) the trainer used.
    ``release(noise)`` loads ``theta0 + Delta + noise`` into ``model``."""

    data: MemorizationData
    trainer: DSITrainer
    theta0: np.ndarray
    update: np.ndarray
    differences: np.ndarray
    noise_multiplier: float
    covariance: OptimalCovariance
    model: Any = field(repr=False)

    def release(self, noise: np.ndarray | float = 0.0) -> Any:
        torch = require_torch()
        params = [p for p in self.model.parameters() if p.requires_grad]
        vec = torch.as_tensor(self.theta0 + self.update + noise, dtype=torch.float32)
        torch.nn.utils.vector_to_parameters(vec, params)
        return self.model

    def draw_noise(self, rng: np.random.Generator) -> np.ndarray:
        """One draw of ``c * N(0, Sigma)``, the trainer's noise law."""
        return self.noise_multiplier * self.covariance.sample(rng)


def train_one_round(
    data: MemorizationData, seed: int, epsilon: float, *, lr: float = 0.5, local_steps: int = 150
) -> OneRound:
    """Train the MLP (init from ``seed``) with :class:`DSITrainer` for one round of ``local_steps``
    full-batch SGD steps at ``lr`` under (epsilon, ``data.config.delta``) per canary (``gdp`` accountant)."""
    torch = require_torch()
    check_positive(epsilon, name="epsilon")
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
        seed=seed,
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
    seed: int,
    epsilon: float,
    draws: int,
    *,
    lr: float = 0.5,
    local_steps: int = 150,
    noise_seed: int | None = None,
    data: MemorizationData | None = None,
) -> ExpectedExposure:
    """Expected canary exposure of DSI's one-round release on ``seed``'s data at (epsilon, delta).

    Trains one round (:func:`train_one_round`), then releases ``theta0 + Delta + c z_k`` for ``draws``
    independent ``z_k ~ N(0, Sigma)`` from ``np.random.default_rng(noise_seed)`` (default ``10_000 +
    seed``). Sigma, Delta and the seeded stream do not depend on epsilon, so different epsilons of one
    seed share the same ``z_k`` scaled by their own ``c`` (common random numbers: the differences between
    epsilons are paired). ``data`` defaults to :func:`memorization_data` for ``seed``.
    """
    if draws < 2:
        raise ValueError(f"draws must be at least 2, got {draws!r}")
    data = data if data is not None else memorization_data(seed)
    rnd = train_one_round(data, seed, epsilon, lr=lr, local_steps=local_steps)
    trainer_exp, _ = candidate_exposures(rnd.model, data)
    trainer_acc = _accuracy(rnd.model, data.x_test, data.y_test)
    gen = np.random.default_rng(10_000 + seed if noise_seed is None else noise_seed)
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
