"""Training of the example networks (Adam, cross-entropy or logistic loss, mini-batches of graphs)."""

from __future__ import annotations

from dataclasses import dataclass

import torch
from icml25_shared.random import RandomStateLike, check_random_state
from torch import nn

from equigx.graphs import Graphs
from equigx.metrics import predict

__all__ = ["TrainResult", "accuracy", "train"]


@dataclass(frozen=True)
class TrainResult:
    """Loss per epoch and final training accuracy.

    Attributes
    ----------
    losses : list of float
        Mean loss per epoch.
    train_accuracy : float
        Accuracy on the training graphs after the last epoch (NaN for a regression model).
    """

    losses: list[float]
    train_accuracy: float


def accuracy(model: nn.Module, graphs: Graphs) -> float:
    """Share of graphs whose predicted class equals ``graphs.y``.

    Parameters
    ----------
    model : torch.nn.Module
        The network.
    graphs : Graphs
        Labelled batch.

    Returns
    -------
    float
        Accuracy.
    """
    if graphs.y is None:
        raise ValueError("graphs.y is None: accuracy needs labels")
    return float((predict(model, graphs) == graphs.y.numpy()).mean())


def train(model: nn.Module, graphs: Graphs, *, epochs: int = 20, lr: float = 1e-2, batch_size: int = 32,
          random_state: RandomStateLike = None) -> TrainResult:
    """Fit ``model`` on labelled graphs.

    Parameters
    ----------
    model : torch.nn.Module
        A network from :mod:`equigx.models` (one logit: logistic loss; several: cross-entropy; a model
        with ``task="regression"``: mean squared error against float ``graphs.y``).
    graphs : Graphs
        Training graphs with ``y``.
    epochs : int, default 20
        Passes over the data.
    lr : float, default 1e-2
        Adam learning rate.
    batch_size : int, default 32
        Graphs per step.
    random_state : None, int or numpy Generator
        Shuffling (parameters are initialised by torch's generator: seed it with ``torch.manual_seed``).

    Returns
    -------
    TrainResult
        Losses and training accuracy.
    """
    if graphs.y is None:
        raise ValueError("train needs labels: graphs.y is None")
    regression = getattr(model, "task", "classification") == "regression"
    if regression and not graphs.y.is_floating_point():
        raise ValueError("a regression model needs float targets in graphs.y")
    rng = check_random_state(random_state)
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    losses = []
    for _ in range(epochs):
        order = rng.permutation(graphs.n_graphs)
        total = 0.0
        for start in range(0, len(order), batch_size):
            part = graphs.select(torch.as_tensor(order[start:start + batch_size]))
            assert part.y is not None  # checked above
            logits = model(part)
            if regression:
                loss = nn.functional.mse_loss(logits[:, 0], part.y.to(logits))
            elif logits.shape[1] == 1:
                loss = nn.functional.binary_cross_entropy_with_logits(logits[:, 0], part.y.to(logits))
            else:
                loss = nn.functional.cross_entropy(logits, part.y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += float(loss.detach()) * part.n_graphs
        losses.append(total / graphs.n_graphs)
    return TrainResult(losses, float("nan") if regression else accuracy(model, graphs))


