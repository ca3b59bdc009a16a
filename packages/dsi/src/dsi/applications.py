"""The paper's three uses of DSI at CPU scale on scikit-learn's digits.

Memorisation mitigation (canary exposure), backdoor defence (blended trigger) and contribution control for a
protected source.

Every function trains the same small MLP with one of these regimes at a matched (epsilon, delta):
"dsi" (:class:`DSITrainer`, optimal covariance), "isotropic" (DSITrainer with sigma^2 I, the same
guarantee), "dpsgd" (opacus DP-SGD: per-sample clipping, Poisson sampling, isotropic noise; the
(epsilon, delta) is per sample), "dpsgd-group" (DP-SGD whose per-sample target is chosen so that a group
of k samples, e.g. a canary's k copies, gets (epsilon, delta) through Gaussian-DP group privacy, mu_group
= k mu_sample: the same protected unit as DSI), or "none" (the same rounds without noise).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
from icml25_shared.random import int_seed, spawn
from icml25_shared.validation import Interval, Options, check_params

from dsi.training import DSITrainer, backward, require_torch

__all__ = [
    "BackdoorExpectation",
    "BackdoorResult",
    "ContributionResult",
    "MemorizationResult",
    "TaskConfig",
    "backdoor_defense",
    "backdoor_expectation",
    "canary_exposure",
    "contribution_control",
    "group_sample_epsilon",
    "memorization_mitigation",
    "train_dpsgd",
]

Regime = Literal["dsi", "isotropic", "dpsgd", "dpsgd-group", "none"]
_REGIMES = ("dsi", "isotropic", "dpsgd", "dpsgd-group", "none")


@dataclass(frozen=True)
class TaskConfig:
    """Training setup shared by the applications (the reproduce task).

    ``rounds`` x ``local_steps`` optimizer steps for DSI/isotropic/none; DP-SGD gets the same number
    of optimizer steps (``rounds * local_steps``) at ``dpsgd_batch_size``. ``augment`` adds that many
    jittered copies (1-pixel shifts, pixel noise) of every training image, as the paper's augmentation
    multiplicity does. ``accountant`` calibrates DSI/isotropic noise ("gdp": exact Gaussian-DP composition,
    as tight as opacus' own accountant is for DP-SGD; "zcdp": the paper's conversion). ``max_grad_norm``
    clips per-sample gradients in the DSI, isotropic and no-noise regimes (DP-SGD uses
    ``dpsgd_max_grad_norm``). It defaults to None (no clipping): setting it to 1.0 (the paper's ``mgn 1``,
    DP-SGD's clip) was measured and is worse overall on this task (README, results/reproduce_mgn1.md).
    ``validation`` is the fraction of the training split held out (never trained on) so that
    hyper-parameters can be chosen on validation accuracy instead of test accuracy; 0 keeps the whole
    training split for training (the results then carry ``validation_accuracy = nan``).
    """

    hidden: int = 64
    optimizer: str = "sgd"
    lr: float = 0.5
    rounds: int = 30
    local_steps: int = 5
    n_sources: int = 30
    n_untrusted: int = 3
    augment: int = 0
    delta: float = 1e-5
    accountant: str = "gdp"
    max_grad_norm: float | None = None
    dpsgd_batch_size: int = 128
    dpsgd_lr: float = 0.5
    dpsgd_max_grad_norm: float = 1.0
    validation: float = 0.0


def canary_exposure(canary_loss: float, reference_losses: Any) -> float:
    """Carlini et al.'s exposure of one inserted canary, in bits.

    Exposure is log2(R + 1) - log2(rank) of the canary's loss among R reference candidates that were never
    trained on (rank 1 = lowest loss = fully exposed).

    Parameters
    ----------
    canary_loss : float
        The inserted canary's loss.
    reference_losses : array-like of shape (R,)
        Losses of the never-inserted candidates.

    Returns
    -------
    float
        The exposure, between 0 and log2(R + 1).
    """
    ref = np.asarray(reference_losses, dtype=np.float64).ravel()
    if ref.size == 0 or not np.all(np.isfinite(ref)) or not math.isfinite(canary_loss):
        raise ValueError("canary_exposure needs a finite canary loss and a non-empty finite reference set")
    rank = 1 + int(np.sum(ref < canary_loss)) + 0.5 * int(np.sum(ref == canary_loss))
    return float(np.log2(ref.size + 1) - np.log2(rank))


@functools.lru_cache(maxsize=4)
def _digits(seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """75/25 split of scikit-learn's digits scaled to [0, 1] (cached; callers must not modify the arrays)."""
    try:
        from sklearn.datasets import load_digits
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError("the digits applications need scikit-learn; install it with `pip install dsi[train]`") from exc

    features, labels = load_digits(return_X_y=True)
    x = np.asarray(features, dtype=np.float64) / 16.0
    y = np.asarray(labels, dtype=np.int64)
    rng = np.random.default_rng(seed)
    perm = rng.permutation(len(y))
    cut = int(0.75 * len(y))
    return x[perm[:cut]], y[perm[:cut]], x[perm[cut:]], y[perm[cut:]]


# Named auxiliary streams of one integer seed: independent of default_rng(seed) (the split, canaries and
# sources) and of every other seed's streams (a generator seeded with seed plus one would be the next seed's main stream).
_STREAMS = ("augment", "exposure-noise", "backdoor-noise")


def _stream(seed: int, name: str) -> np.random.Generator:
    """The independent stream ``name`` of ``seed`` (a child of ``SeedSequence(seed)``)."""
    return spawn(seed, len(_STREAMS))[_STREAMS.index(name)]


Split = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]


def _training_data(seed: int, augment: int, validation: float = 0.0) -> Split:
    """Return (train x, y, validation x, y, test x, y).

    The digits split with the last ``validation`` share of the (already shuffled) training split held out,
    then ``augment`` jittered copies of the training part.
    """
    if not 0.0 <= validation < 1.0:
        raise ValueError(f"validation must lie in [0, 1), got {validation!r}")
    xtr, ytr, xte, yte = _digits(seed)
    cut = len(ytr) - int(round(validation * len(ytr)))
    xtr, ytr, xva, yva = xtr[:cut], ytr[:cut], xtr[cut:], ytr[cut:]
    if augment <= 0:
        return xtr, ytr, xva, yva, xte, yte
    rng = _stream(seed, "augment")
    copies = [xtr]
    for _ in range(augment):
        img = xtr.reshape(-1, 8, 8)
        shifted = np.stack(
            [
                np.roll(im, (int(a), int(b)), axis=(0, 1))
                for im, a, b in zip(img, rng.integers(-1, 2, len(img)), rng.integers(-1, 2, len(img)), strict=True)
            ]
        )
        copies.append(np.clip(shifted.reshape(len(xtr), -1) + rng.normal(0, 0.05, xtr.shape), 0.0, 1.0))
    return np.concatenate(copies), np.tile(ytr, augment + 1), xva, yva, xte, yte


def _mlp(d_in: int, hidden: int, n_out: int, seed: int) -> Any:
    """The task MLP, initialised from ``seed`` without touching the caller's global torch RNG."""
    torch = require_torch()
    with _seeded_global_torch_rng(seed):
        return torch.nn.Sequential(torch.nn.Linear(d_in, hidden), torch.nn.Tanh(), torch.nn.Linear(hidden, n_out))


@contextmanager
def _seeded_global_torch_rng(seed: int) -> Iterator[None]:
    """Seed torch's global CPU generator inside the block and give the caller's state back afterwards.

    For code that can only draw from the global generator (``nn.Linear`` initialisation, opacus' sampling and
    noise); every other draw here uses a local generator.
    """
    torch = require_torch()
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        yield


_SEED = ["random_state"]


def _noise_seed(noise_random_state: Any) -> int | None:
    """The int seed of the mechanism's noise; None keeps the data seed."""
    return None if noise_random_state is None else int_seed(noise_random_state)

_NOISE_SEED = [None, "random_state"]
_EPSILON = [Interval(float, 0, None, closed="neither")]


def _check_regime(regime: str, epsilon: float | None, owner: str) -> None:
    check_params({"regime": regime}, {"regime": [Options(str, set(_REGIMES))]}, owner=owner)
    if regime != "none":
        check_params({"epsilon": epsilon}, {"epsilon": _EPSILON}, owner=owner)


def train_dpsgd(
    model: Any,
    x: np.ndarray,
    y: np.ndarray,
    *,
    epsilon: float,
    delta: float,
    steps: int,
    batch_size: int,
    lr: float,
    max_grad_norm: float,
    optimizer: str = "adam",
    random_state: Any = 0,
) -> Any:
    """Train ``model`` with opacus DP-SGD (the peer).

    Poisson sampling at opacus' rate 1/ceil(N/batch_size) (expected batch N/ceil(N/batch_size)) for about
    ``steps`` steps (whole epochs, rounded), noise calibrated by opacus' accountant to (epsilon, delta) per
    sample. ``random_state`` seeds the sampling and the noise (opacus draws from torch's global generator,
    which is forked for the run, so the caller's state is left as it was). Returns the trained model.
    """
    check_params(
        {"epsilon": epsilon, "delta": delta, "steps": steps, "batch_size": batch_size, "lr": lr,
         "max_grad_norm": max_grad_norm, "optimizer": optimizer, "random_state": random_state},
        {"epsilon": _EPSILON, "delta": [Interval(float, 0, 1, closed="neither")], "steps": [Interval(int, 1, None)],
         "batch_size": [Interval(int, 1, None)], "lr": [Interval(float, 0, None, closed="neither")],
         "max_grad_norm": [Interval(float, 0, None, closed="neither")], "optimizer": [Options(str, {"adam", "sgd"})],
         "random_state": _SEED},
        owner="train_dpsgd",
    )
    seed = int_seed(random_state)
    require_torch()
    try:
        from opacus import PrivacyEngine
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError("the DP-SGD peer needs opacus; install it with `pip install dsi[peers]`") from exc

    with _seeded_global_torch_rng(seed):
        return _run_dpsgd(model, x, y, epsilon, delta, steps, batch_size, lr, max_grad_norm, optimizer, PrivacyEngine)


def _run_dpsgd(
    model: Any,
    x: np.ndarray,
    y: np.ndarray,
    epsilon: float,
    delta: float,
    steps: int,
    batch_size: int,
    lr: float,
    max_grad_norm: float,
    optimizer: str,
    engine_cls: Any,
) -> Any:
    import warnings

    torch = require_torch()
    ds = torch.utils.data.TensorDataset(torch.as_tensor(x, dtype=torch.float32), torch.as_tensor(y))
    loader = torch.utils.data.DataLoader(ds, batch_size=batch_size, shuffle=True)
    opt = (
        torch.optim.Adam(model.parameters(), lr=lr)
        if optimizer == "adam"
        else torch.optim.SGD(model.parameters(), lr=lr)
    )
    epochs = max(1, round(steps / len(loader)))  # opacus samples at rate 1/len(loader): len(loader) steps/epoch
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # opacus warns about secure RNG and hooks; not actionable here
        engine = engine_cls()
        model, opt, loader = engine.make_private_with_epsilon(
            module=model,
            optimizer=opt,
            data_loader=loader,
            target_epsilon=epsilon,
            target_delta=delta,
            epochs=epochs,
            max_grad_norm=max_grad_norm,
        )
        model.train()
        for _ in range(epochs):
            for xb, yb in loader:
                if len(xb) == 0:
                    continue
                opt.zero_grad()
                torch.nn.functional.cross_entropy(model(xb), yb).backward()
                opt.step()
    return model._module if hasattr(model, "_module") else model


def group_sample_epsilon(epsilon: float, delta: float, group_size: int) -> float:
    """Per-sample epsilon whose Gaussian-DP mu, times ``group_size``, gives (epsilon, delta) to the group."""
    from dsi.accounting import epsilon_from_gdp, gdp_mu_from_epsilon

    return epsilon_from_gdp(gdp_mu_from_epsilon(epsilon, delta) / group_size, delta)


def _train(
    regime: str,
    x: np.ndarray,
    y: np.ndarray,
    groups: np.ndarray,
    epsilon: float | None,
    cfg: TaskConfig,
    seed: int,
    n_classes: int = 10,
    group_size: int = 1,
    noise_seed: Any = None,
) -> Any:
    """Train the task MLP under ``regime``; return the model.

    ``seed`` initialises the MLP; ``noise_seed`` (default ``seed``) drives the mechanism's noise (and
    DP-SGD's sampling).
    """
    noise_seed = seed if noise_seed is None else noise_seed
    torch = require_torch()
    model = _mlp(x.shape[1], cfg.hidden, n_classes, seed)
    if regime == "dpsgd-group":
        regime, epsilon = "dpsgd", group_sample_epsilon(float(epsilon or 0.0), cfg.delta, group_size)
    if regime == "dpsgd":
        return train_dpsgd(
            model,
            x,
            y,
            epsilon=float(epsilon or 0.0),  # validated positive for every noisy regime
            delta=cfg.delta,
            steps=cfg.rounds * cfg.local_steps,
            batch_size=cfg.dpsgd_batch_size,
            lr=cfg.dpsgd_lr,
            max_grad_norm=cfg.dpsgd_max_grad_norm,
            optimizer=cfg.optimizer,
            random_state=noise_seed,
        )
    xt, yt = torch.as_tensor(x, dtype=torch.float32), torch.as_tensor(y)
    if regime == "none":  # the same rounds of a fresh optimizer, released without noise
        for _ in range(cfg.rounds):
            opt = (
                torch.optim.Adam(model.parameters(), lr=cfg.lr)
                if cfg.optimizer == "adam"
                else torch.optim.SGD(model.parameters(), lr=cfg.lr)
            )
            for _ in range(cfg.local_steps):
                opt.zero_grad()
                backward(model, torch.nn.functional.cross_entropy, xt, yt, cfg.max_grad_norm)
                opt.step()
        return model
    trainer = DSITrainer(
        model,
        optimizer=cfg.optimizer,
        lr=cfg.lr,
        local_steps=cfg.local_steps,
        rounds=cfg.rounds,
        delta=cfg.delta,
        noise="isotropic" if regime == "isotropic" else "dsi",
        random_state=noise_seed,
        epsilon=epsilon,
        accountant=cfg.accountant,
        max_grad_norm=cfg.max_grad_norm,
    )
    trainer.fit(xt, yt, groups)
    return model


def _losses(model: Any, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    torch = require_torch()
    with torch.no_grad():
        out = model(torch.as_tensor(x, dtype=torch.float32))
        return torch.nn.functional.cross_entropy(out, torch.as_tensor(y), reduction="none").numpy().astype(np.float64)


def _accuracy(model: Any, x: np.ndarray, y: np.ndarray) -> float:
    if len(y) == 0:
        return float("nan")
    torch = require_torch()
    with torch.no_grad():
        pred = model(torch.as_tensor(x, dtype=torch.float32)).argmax(1).numpy()
    return float(np.mean(pred == y))


def _source_groups(n: int, n_sources: int, rng: np.random.Generator) -> np.ndarray:
    return rng.permutation(np.arange(n) % n_sources).astype(np.int64)


@dataclass(frozen=True)
class MemorizationResult:
    """One memorisation run.

    Canary exposure (bits, max log2(n_references + 1)), clean test accuracy and clean validation accuracy
    (nan without a validation split; the only number hyper-parameters may be chosen on).
    """

    regime: str
    epsilon: float | None
    test_accuracy: float
    exposure: float
    exposures: np.ndarray = field(repr=False)
    max_exposure: float = 0.0
    validation_accuracy: float = float("nan")


def _insert_canaries(
    rng: np.random.Generator,
    x: np.ndarray,
    y: np.ndarray,
    *,
    n_canaries: int,
    canary_repeats: int,
    n_references: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Draw and insert the canaries.

    Draw ``n_canaries`` blocks of ``n_references + 1`` random 8x8 candidates with random labels, insert
    the first of each block ``canary_repeats`` times into ``(x, y)``, and return
    ``(x, y, groups, cand_x, cand_y)``; groups: canary block index, -1 for the clean rows.
    """
    cand_x = rng.uniform(0.0, 1.0, size=(n_canaries * (n_references + 1), x.shape[1]))
    cand_y = rng.integers(0, 10, size=len(cand_x))
    inserted = np.arange(n_canaries) * (n_references + 1)
    x_all = np.concatenate([x, np.repeat(cand_x[inserted], canary_repeats, axis=0)])
    y_all = np.concatenate([y, np.repeat(cand_y[inserted], canary_repeats)])
    groups = np.concatenate([np.full(len(y), -1), np.repeat(np.arange(n_canaries), canary_repeats)])
    return x_all, y_all, groups, cand_x, cand_y


@dataclass(frozen=True)
class MemorizationData:
    """Training set with the canaries inserted, the candidates, the clean test split and the validation split.

    ``cand_x`` holds ``n_canaries`` blocks of ``n_references + 1`` candidates; the first of each block is
    the inserted canary (``canary_repeats`` copies in ``x``, group id = block index), the rest are never
    trained on. Clean training digits have group id -1 (unprotected).
    """

    config: TaskConfig
    x: np.ndarray
    y: np.ndarray
    groups: np.ndarray
    cand_x: np.ndarray
    cand_y: np.ndarray
    x_test: np.ndarray
    y_test: np.ndarray
    n_canaries: int
    n_references: int
    x_val: np.ndarray
    y_val: np.ndarray


def _memorization_data(
    seed: int, cfg: TaskConfig, *, n_canaries: int, canary_repeats: int, n_references: int
) -> MemorizationData:
    xtr, ytr, xva, yva, xte, yte = _training_data(seed, cfg.augment, cfg.validation)
    x, y, groups, cand_x, cand_y = _insert_canaries(
        np.random.default_rng(seed),
        xtr,
        ytr,
        n_canaries=n_canaries,
        canary_repeats=canary_repeats,
        n_references=n_references,
    )
    return MemorizationData(cfg, x, y, groups, cand_x, cand_y, xte, yte, n_canaries, n_references, xva, yva)


def memorization_mitigation(
    *,
    regime: Regime = "dsi",
    epsilon: float | None = 4.0,
    n_canaries: int = 8,
    canary_repeats: int = 4,
    n_references: int = 255,
    config: TaskConfig | None = None,
    random_state: Any = 0,
    noise_random_state: Any = None,
) -> MemorizationResult:
    """Insert secret canaries into digits training data and measure how much the trained model exposes them.

    Threat model: an attacker knows the canary format (a random 8x8 image with a random label) and the
    candidate set, queries the model's loss on every candidate and ranks them; exposure measures how far
    the inserted canary stands out. Each canary (``canary_repeats`` copies) is one protected group with
    the (epsilon, delta) guarantee; the clean digits are not protected (group -1). DP-SGD, the peer,
    protects every sample at the same (epsilon, delta). DSI's Sigma is fitted on the canaries' own
    differences, so its exposure does not fall to the uniform-rank 1.44 bits as epsilon -> 0 (see
    studies/exposure.md); DP-SGD's data-independent noise has no such floor.

    ``random_state`` fixes the data (split, canaries and candidates) and the model's initialisation;
    ``noise_random_state`` fixes the mechanism's noise (DP-SGD: its sampling and noise). By default the
    noise follows ``random_state``; pass different noise seeds on one ``random_state`` to draw the same
    training run under independent noise (the expectation over the mechanism).
    """
    owner = "memorization_mitigation"
    check_params(
        {"n_canaries": n_canaries, "canary_repeats": canary_repeats, "n_references": n_references,
         "config": config, "random_state": random_state, "noise_random_state": noise_random_state},
        {"n_canaries": [Interval(int, 1, None)], "canary_repeats": [Interval(int, 1, None)],
         "n_references": [Interval(int, 1, None)], "config": [None, TaskConfig], "random_state": _SEED,
         "noise_random_state": _NOISE_SEED},
        owner=owner,
    )
    _check_regime(regime, epsilon, owner)
    seed = int_seed(random_state)
    cfg = config or TaskConfig()
    data = _memorization_data(
        seed, cfg, n_canaries=n_canaries, canary_repeats=canary_repeats, n_references=n_references
    )
    model = _train(
        regime, data.x, data.y, data.groups, epsilon, cfg, seed, group_size=canary_repeats,
        noise_seed=_noise_seed(noise_random_state),
    )
    losses = _losses(model, data.cand_x, data.cand_y).reshape(n_canaries, n_references + 1)
    exposures = np.array([canary_exposure(row[0], row[1:]) for row in losses])
    return MemorizationResult(
        regime=regime,
        epsilon=epsilon if regime != "none" else None,
        test_accuracy=_accuracy(model, data.x_test, data.y_test),
        exposure=float(exposures.mean()),
        exposures=exposures,
        max_exposure=float(np.log2(n_references + 1)),
        validation_accuracy=_accuracy(model, data.x_val, data.y_val),
    )


def blend_trigger(x: np.ndarray, *, alpha: float, seed: int = 12345) -> np.ndarray:
    """Blend a fixed random 8x8 pattern into images: (1 - alpha) x + alpha pattern (BackdoorBench's 'blended')."""
    pattern = np.random.default_rng(seed).uniform(0.0, 1.0, size=x.shape[1])
    return (1.0 - alpha) * x + alpha * pattern


@dataclass(frozen=True)
class BackdoorResult:
    """One backdoor run.

    Clean test accuracy, attack success rate (triggered non-target test images classified as target) and
    clean validation accuracy (nan without a validation split; what a defender can select on).
    """

    regime: str
    epsilon: float | None
    clean_accuracy: float
    attack_success_rate: float
    validation_accuracy: float = float("nan")


def backdoor_defense(
    *,
    regime: Regime = "dsi",
    epsilon: float | None = 4.0,
    n_poisons: int = 40,
    blend: float = 0.3,
    target: int = 0,
    config: TaskConfig | None = None,
    random_state: Any = 0,
    noise_random_state: Any = None,
) -> BackdoorResult:
    """Blended-trigger backdoor on digits, one malicious source among ``config.n_untrusted`` untrusted ones.

    Threat model: the training data come from ``config.n_sources`` equal sources; the first
    ``config.n_untrusted`` are untrusted (e.g. scraped) and one of them, unknown to the defender, adds
    ``n_poisons`` of its clean images blended with a trigger and relabelled ``target``. The defender
    protects every untrusted source with DSI, which bounds how far any one of them can move the model; the
    trigger is carried by one source only, while clean features are shared by all.

    ``random_state`` fixes the data (split, sources and poisons) and the model's initialisation;
    ``noise_random_state`` fixes the mechanism's noise (DP-SGD: its sampling and noise). By default the
    noise follows ``random_state``; pass different noise seeds on one ``random_state`` to draw the same
    training run under independent noise (the expectation over the mechanism).

    Examples
    --------
    >>> from dsi.applications import TaskConfig, backdoor_defense
    >>> cfg = TaskConfig(hidden=8, rounds=2, local_steps=2)
    >>> a = backdoor_defense(epsilon=4.0, config=cfg, random_state=0, noise_random_state=1)
    >>> b = backdoor_defense(epsilon=4.0, config=cfg, random_state=0, noise_random_state=1)
    >>> (a.clean_accuracy, a.attack_success_rate) == (b.clean_accuracy, b.attack_success_rate)
    True
    """
    owner = "backdoor_defense"
    check_params(
        {"n_poisons": n_poisons, "blend": blend, "target": target, "config": config,
         "random_state": random_state, "noise_random_state": noise_random_state},
        {"n_poisons": [Interval(int, 1, None)], "blend": [Interval(float, 0, 1, closed="neither")],
         "target": [Interval(int, 0, 9)], "config": [None, TaskConfig], "random_state": _SEED,
         "noise_random_state": _NOISE_SEED},
        owner=owner,
    )
    _check_regime(regime, epsilon, owner)
    seed = int_seed(random_state)
    cfg = config or TaskConfig()
    rng = np.random.default_rng(seed)
    xtr, ytr, xva, yva, xte, yte = _training_data(seed, cfg.augment, cfg.validation)
    if not 1 <= cfg.n_untrusted <= cfg.n_sources:
        raise ValueError(f"config.n_untrusted must lie in [1, n_sources={cfg.n_sources}], got {cfg.n_untrusted}")
    sources = _source_groups(len(ytr), cfg.n_sources, rng)
    groups = np.where(sources < cfg.n_untrusted, sources, -1)
    bad_source = int(rng.integers(cfg.n_untrusted))
    own = np.flatnonzero(groups == bad_source)
    chosen = rng.choice(own, size=n_poisons, replace=len(own) < n_poisons)
    x = np.concatenate([xtr, blend_trigger(xtr[chosen], alpha=blend)])
    y = np.concatenate([ytr, np.full(len(chosen), target)])
    groups = np.concatenate([groups, np.full(len(chosen), bad_source)])
    model = _train(regime, x, y, groups, epsilon, cfg, seed, noise_seed=_noise_seed(noise_random_state))
    keep = yte != target
    with_trigger = blend_trigger(xte[keep], alpha=blend)
    torch = require_torch()
    with torch.no_grad():
        pred = model(torch.as_tensor(with_trigger, dtype=torch.float32)).argmax(1).numpy()
    return BackdoorResult(
        regime=regime,
        epsilon=epsilon if regime != "none" else None,
        clean_accuracy=_accuracy(model, xte, yte),
        attack_success_rate=float(np.mean(pred == target)),
        validation_accuracy=_accuracy(model, xva, yva),
    )


@dataclass(frozen=True)
class ContributionResult:
    """How much a protected source's presence changes the model, with and without DSI.

    ``gap_*`` is the mean loss on the source's own samples of the counterfactual model trained without it
    minus that of the model trained with it (a membership signal); ``tpr_bound`` is the guaranteed
    maximum true-positive rate at 5% false-positive rate of any test telling the two apart.
    """

    epsilon: float
    gap_dsi: float
    gap_none: float
    test_accuracy_dsi: float
    test_accuracy_none: float
    tpr_bound: float


def contribution_control(
    *,
    epsilon: float = 2.0,
    source_size: int = 20,
    config: TaskConfig | None = None,
    random_state: Any = 0,
    noise_random_state: Any = None,
) -> ContributionResult:
    """Protect one source (e.g. a copyrighted collection: ``source_size`` mislabelled-looking rare samples).

    Threat model: the owner of the source wants the released model to be nearly the same whether or not
    the source was used; only that source is protected (group 0), the rest of the data is public (-1).

    ``random_state`` fixes the data (split, the source) and the model's initialisation;
    ``noise_random_state`` fixes the mechanism's noise (DP-SGD: its sampling and noise). By default the
    noise follows ``random_state``; pass different noise seeds on one ``random_state`` to draw the same
    training run under independent noise (the expectation over the mechanism).
    """
    from dsi.accounting import gdp_mu, rho_from_epsilon, sigma_from_rho, tradeoff_power

    check_params(
        {"epsilon": epsilon, "source_size": source_size, "config": config, "random_state": random_state,
         "noise_random_state": noise_random_state},
        {"epsilon": _EPSILON, "source_size": [Interval(int, 1, None)], "config": [None, TaskConfig],
         "random_state": _SEED, "noise_random_state": _NOISE_SEED},
        owner="contribution_control",
    )
    seed = int_seed(random_state)
    cfg = config or TaskConfig()
    epsilon = float(epsilon)
    rng = np.random.default_rng(seed)
    xtr, ytr, xte, yte = _digits(seed)
    src = rng.choice(len(ytr), size=source_size, replace=False)
    src_x = np.clip(xtr[src] + rng.normal(0, 0.3, size=xtr[src].shape), 0, 1)
    src_y = (ytr[src] + 1) % 10  # a distinctive labelling only this source teaches
    rest = np.setdiff1d(np.arange(len(ytr)), src)
    x = np.concatenate([xtr[rest], src_x])
    y = np.concatenate([ytr[rest], src_y])
    groups = np.concatenate([np.full(len(rest), -1), np.zeros(source_size, dtype=np.int64)])
    without = _train("none", xtr[rest], ytr[rest], np.zeros(len(rest), dtype=np.int64), None, cfg, seed)
    base = _losses(without, src_x, src_y).mean()
    plain = _train("none", x, y, groups, None, cfg, seed)
    private = _train("dsi", x, y, groups, epsilon, cfg, seed, noise_seed=_noise_seed(noise_random_state))
    mu = gdp_mu(sigma_from_rho(rho_from_epsilon(epsilon, cfg.delta)))
    return ContributionResult(
        epsilon=epsilon,
        gap_dsi=float(base - _losses(private, src_x, src_y).mean()),
        gap_none=float(base - _losses(plain, src_x, src_y).mean()),
        test_accuracy_dsi=_accuracy(private, xte, yte),
        test_accuracy_none=_accuracy(plain, xte, yte),
        tpr_bound=float(tradeoff_power(0.05, mu)),
    )


@dataclass(frozen=True)
class BackdoorExpectation:
    """Backdoor success in expectation over the mechanism's noise, for one data seed and epsilon.

    ``attack_success_rate`` is the mean over ``draws`` independent noise draws of one training setup (the
    same data, poisons and initialisation); ``per_draw_*`` hold each draw's value, i.e. what a single run
    would report. ``undefended_*`` is the same setup trained without noise (regime "none").
    ``amplified_fraction`` is the share of draws whose attack success exceeds the undefended one.
    """

    random_state: int
    epsilon: float
    draws: int
    attack_success_rate: float
    clean_accuracy: float
    undefended_attack_success_rate: float
    undefended_clean_accuracy: float
    amplified_fraction: float
    per_draw_attack_success_rate: np.ndarray = field(repr=False)
    per_draw_clean_accuracy: np.ndarray = field(repr=False)
    noise_seeds: tuple[int, ...] = field(repr=False, default=())


def backdoor_expectation(
    *,
    epsilon: float = 4.0,
    draws: int = 20,
    config: TaskConfig | None = None,
    random_state: Any = 0,
    noise_random_state: Any = None,
    **backdoor_options: Any,
) -> BackdoorExpectation:
    """Expected attack success of DSI's backdoor defence over independent noise draws.

    Runs :func:`backdoor_defense` once without noise and ``draws`` times under DSI at ``epsilon`` on the
    same ``random_state`` (data, sources, poisons, initialisation), each with its own noise seed.

    Parameters
    ----------
    epsilon : float, default 4.0
        The per-source guarantee at ``config.delta``.
    draws : int, default 20
        Number of noise draws (at least 2).
    config : TaskConfig, optional
        The training setup (default ``TaskConfig()``).
    random_state : int, Generator or SeedSequence, default 0
        The data seed.
    noise_random_state : None, int, Generator or SeedSequence, optional
        Root of the noise seeds (``draws`` children of it through ``SeedSequence.spawn``); by default the
        ``"backdoor-noise"`` stream of the data seed, so two data seeds never share noise.
    **backdoor_options
        Passed to :func:`backdoor_defense` (``n_poisons``, ``blend``, ``target``).

    Returns
    -------
    BackdoorExpectation
        Mean and per-draw attack success and clean accuracy, and the undefended reference.
    """
    from icml25_shared.random import child_seeds

    owner = "backdoor_expectation"
    check_params(
        {"epsilon": epsilon, "draws": draws, "random_state": random_state, "noise_random_state": noise_random_state},
        {"epsilon": _EPSILON, "draws": [Interval(int, 2, None)], "random_state": _SEED,
         "noise_random_state": _NOISE_SEED},
        owner=owner,
    )
    seed = int_seed(random_state)
    root = _stream(seed, "backdoor-noise") if noise_random_state is None else noise_random_state
    noise_seeds = tuple(child_seeds(root, draws))
    base = backdoor_defense(regime="none", epsilon=None, config=config, random_state=seed, **backdoor_options)
    runs = [
        backdoor_defense(
            regime="dsi", epsilon=epsilon, config=config, random_state=seed, noise_random_state=s, **backdoor_options
        )
        for s in noise_seeds
    ]
    asr = np.array([r.attack_success_rate for r in runs])
    acc = np.array([r.clean_accuracy for r in runs])
    return BackdoorExpectation(
        random_state=seed,
        epsilon=float(epsilon),
        draws=draws,
        attack_success_rate=float(asr.mean()),
        clean_accuracy=float(acc.mean()),
        undefended_attack_success_rate=base.attack_success_rate,
        undefended_clean_accuracy=base.clean_accuracy,
        amplified_fraction=float(np.mean(asr > base.attack_success_rate)),
        per_draw_attack_success_rate=asr,
        per_draw_clean_accuracy=acc,
        noise_seeds=noise_seeds,
    )
