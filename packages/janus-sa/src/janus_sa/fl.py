"""Federated learning with Janus aggregation: softmax regression on scikit-learn's digits.

Each round, every client runs a few epochs of full-batch gradient descent from the global model and
uploads its model delta; the servers aggregate with Janus; every client unmasks and verifies the
sum and applies the mean delta. :func:`run_federated` also runs plain FedAvg (float mean, no
security) from the same start, so the two trajectories can be compared coordinate by coordinate.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from icml25_shared.random import RandomStateLike, check_random_state
from icml25_shared.validation import Interval, Options

from janus_sa._validation import validate
from janus_sa.protocol import JanusConfig
from janus_sa.quantize import Quantizer
from janus_sa.simulation import InProcessDeployment


def _load_digits():
    try:
        from sklearn.datasets import load_digits
    except ImportError as err:  # pragma: no cover - exercised only without the extra
        raise ImportError("the federated example needs scikit-learn: pip install 'janus-sa[fl]'") from err
    d = load_digits()
    return d.data / 16.0, d.target


def _softmax_grad(w: np.ndarray, x: np.ndarray, y: np.ndarray, n_classes: int) -> np.ndarray:
    wm, b = w[:-n_classes].reshape(x.shape[1], n_classes), w[-n_classes:]
    logits = x @ wm + b
    logits -= logits.max(1, keepdims=True)
    p = np.exp(logits)
    p /= p.sum(1, keepdims=True)
    p[np.arange(len(y)), y] -= 1.0
    return np.concatenate([(x.T @ p).ravel(), p.sum(0)]) / len(y)


def accuracy(w: np.ndarray, x: np.ndarray, y: np.ndarray, n_classes: int = 10) -> float:
    """Classification accuracy of the softmax-regression weights ``w`` (flattened) on ``x``, ``y``."""
    wm, b = w[:-n_classes].reshape(x.shape[1], n_classes), w[-n_classes:]
    return float(np.mean(np.argmax(x @ wm + b, 1) == y))


@dataclass
class FederatedRun:
    """Per-round test accuracy of Janus aggregation and of plain FedAvg, and their parameter gap."""

    accuracy_janus: list[float] = field(default_factory=list)
    accuracy_fedavg: list[float] = field(default_factory=list)
    max_param_gap: list[float] = field(default_factory=list)
    participants: list[int] = field(default_factory=list)
    error_bound: list[float] = field(default_factory=list)
    weights: np.ndarray | None = None


def run_federated(*, n_clients: int = 20, rounds: int = 5, local_steps: int = 10, lr: float = 0.5,
                  clipping_range: float = 4.0, quantization_range: int = 1 << 22,
                  random_state: RandomStateLike = 0, mode: str = "exact", participation: float = 1.0) -> FederatedRun:
    """Train softmax regression on digits split across clients, with Janus and with plain FedAvg.

    Parameters
    ----------
    n_clients : int, default 20
        Clients, each holding an IID shard of the 75 % training split (2 to 1000).
    rounds : int, default 5
        Federated rounds.
    local_steps : int, default 10
        Full-batch gradient steps per client and round.
    lr : float, default 0.5
        Learning rate.
    clipping_range, quantization_range : float, int
        The :class:`Quantizer`'s clip range and number of levels.
    random_state : None, int or numpy Generator, default 0
        Draws the train/test split and the clients sampled each round.
    mode : {"exact", "sketch"}, default "exact"
        Janus commitment mode.
    participation : float, default 1.0
        Fraction of clients sampled each round (dynamic participation).

    Returns
    -------
    FederatedRun
        Per-round accuracies of both, the largest parameter gap, participant counts and error bounds.
    """
    validate({"n_clients": n_clients, "rounds": rounds, "local_steps": local_steps, "lr": lr,
              "participation": participation, "mode": mode, "random_state": random_state},
             {"n_clients": [Interval(int, 2, 1000)], "rounds": [Interval(int, 1, None)],
              "local_steps": [Interval(int, 0, None)], "lr": [Interval(float, 0, None, closed="neither")],
              "participation": [Interval(float, 0, 1, closed="right")], "mode": [Options(str, {"exact", "sketch"})],
              "random_state": ["random_state"]}, owner="run_federated")
    x, y = _load_digits()
    rng = check_random_state(random_state)
    order = rng.permutation(len(y))
    split = int(0.75 * len(y))
    tr, te = order[:split], order[split:]
    shards = np.array_split(tr, n_clients)
    n_classes, d = 10, x.shape[1]
    dim = d * n_classes + n_classes
    cfg = JanusConfig(dim=dim, mode=mode, quantizer=Quantizer(clipping_range=clipping_range,
                                                              quantization_range=quantization_range))
    dep = InProcessDeployment(config=cfg)
    ids = dep.add_clients(n_clients)
    w_janus = np.zeros(dim)
    w_plain = np.zeros(dim)
    out = FederatedRun()

    def local(w, shard):
        w = w.copy()
        for _ in range(local_steps):
            w -= lr * _softmax_grad(w, x[shard], y[shard], n_classes)
        return w

    for _ in range(rounds):
        k = max(2, int(round(participation * n_clients)))
        chosen = sorted(rng.choice(n_clients, size=k, replace=False))
        deltas_j = {ids[i]: local(w_janus, shards[i]) - w_janus for i in chosen}
        deltas_p = [local(w_plain, shards[i]) - w_plain for i in chosen]
        report = dep.run_round(deltas_j, model=w_janus)
        res = report.results[ids[chosen[0]]]
        # all clients hold the same verified mean
        assert all(np.array_equal(r.sum_codes, res.sum_codes) for r in report.results.values())
        w_janus = w_janus + res.mean
        w_plain = w_plain + np.mean(deltas_p, axis=0)
        out.accuracy_janus.append(accuracy(w_janus, x[te], y[te]))
        out.accuracy_fedavg.append(accuracy(w_plain, x[te], y[te]))
        out.max_param_gap.append(float(np.max(np.abs(w_janus - w_plain))))
        out.participants.append(res.n_participants)
        out.error_bound.append(res.error_bound / res.n_participants)
    out.weights = w_janus
    return out
