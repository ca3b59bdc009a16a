"""`demo` and `reproduce`: every method in the market, on synthetic users and a bundled proxy set."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
from icml25_shared.cli import RunContext, progress
from icml25_shared.stats import mean_sd
from icml25_shared.tables import markdown_table

from feature_markets.datasets import MarketData, breast_cancer_proxy, make_market_data
from feature_markets.metrics import MarketReport, market_report
from feature_markets.models import (
    BudgetFeatureClassifier,
    FixedPriceStrategicClassifier,
    MarketAwareClassifier,
    MarketLineSearchClassifier,
    NaiveClassifier,
)

METHODS = {
    "naive": NaiveClassifier,
    "budget-as-feature": BudgetFeatureClassifier,
    "market line search": MarketLineSearchClassifier,
    "strategic, fixed price": FixedPriceStrategicClassifier,
    "market-aware (MASC)": MarketAwareClassifier,
}


def evaluate(data: MarketData, *, random_state: int = 0, epochs: int) -> dict[str, MarketReport]:
    """Fit every method on a 70/30 split and report each on the test users.

    Parameters
    ----------
    data : MarketData
        The users.
    random_state : int, default 0
        Seeds the split and every method's training.
    epochs : int
        Training epochs of every method.

    Returns
    -------
    dict of str to MarketReport
        One report per method in :data:`METHODS`, on the test users.
    """
    train, test = data.split(0.3, random_state=random_state)
    return {
        name: market_report(
            cls(epochs=epochs, random_state=random_state).fit(train.X, train.y, budgets=train.budgets),
            test.X,
            test.y,
            test.budgets,
        )
        for name, cls in METHODS.items()
    }


def _table(reports: dict[str, MarketReport]) -> str:
    headers = ["method", "accuracy before", "short term", "long term", "price (long)", "movers", "welfare", "burden"]
    rows = [
        [
            name,
            f"{r.accuracy_before:.3f}",
            f"{r.accuracy_short:.3f}",
            f"{r.accuracy_long:.3f}",
            f"{r.price_long:.3g}",
            f"{r.share_of_movers:.2f}",
            f"{r.welfare:.3g}",
            f"{r.burden:.3g}",
        ]
        for name, r in reports.items()
    ]
    return markdown_table(rows, headers)


def demo(ctx: RunContext) -> None:
    """Uniform vs unequal label-correlated budgets, and the bundled proxy set; bar chart of accuracy.

    Parameters
    ----------
    ctx : RunContext
        Output folder, seed and ``--quick``.
    """
    import matplotlib.pyplot as plt

    epochs = 15 if ctx.quick else 40
    n = 300 if ctx.quick else 800
    settings = {
        "uniform budgets": make_market_data(n, inequality=1.0, random_state=ctx.seed),
        "inequality 2^10, label-correlated": make_market_data(
            n, inequality=2.0**10, label_correlation=0.5, feature_signal=0.0, random_state=ctx.seed
        ),
        "breast cancer (budget proxy)": breast_cancer_proxy(),
    }
    sections, results = [], {}
    for title, data in progress(settings.items(), desc="setting", total=len(settings)):
        results[title] = evaluate(data, random_state=ctx.seed, epochs=epochs)
        sections += [
            f"**{title}** ({data.description}; {data.y.shape[0]} users, 30% test)",
            "",
            _table(results[title]),
            "",
        ]
    ctx.write_table("\n".join(sections))
    fig, axes = plt.subplots(1, len(settings), figsize=(4.2 * len(settings), 3.9), sharey=True, layout="constrained")
    for ax, (title, reports) in zip(axes, results.items(), strict=True):
        names = list(reports)
        x = np.arange(len(names))
        ax.bar(x - 0.2, [reports[k].accuracy_before for k in names], 0.4, label="before market")
        ax.bar(x + 0.2, [reports[k].accuracy_long for k in names], 0.4, label="after market (long term)")
        ax.set_xticks(x, [k.split(" (")[0] for k in names], rotation=35, ha="right", rotation_mode="anchor",
                      fontsize=8)
        ax.set_xlabel("method")
        ax.set_title(title, fontsize=9)
        ax.axhline(0.5, color="grey", lw=0.5)
    axes[0].set_ylabel("test accuracy")
    axes[0].legend(fontsize=7)
    fig.suptitle(f"one split (30% test), seed {ctx.seed}, {epochs} epochs; grey line: chance", fontsize=9)
    ctx.save_figure(fig)


def _mean_se(values) -> tuple[float, float]:
    """Mean and standard error (0 for one value)."""
    summary = mean_sd(values)
    return summary.mean, summary.sd / np.sqrt(summary.n)


PAIRED = {  # (label, method a, method b): per-split long-term accuracy difference a - b
    "MASC - strategic, fixed price": ("market-aware (MASC)", "strategic, fixed price"),
    "MASC - naive": ("market-aware (MASC)", "naive"),
}


def reproduce(ctx: RunContext) -> None:
    """Accuracy vs budget inequality 2^2..2^10 for every method over 10 splits, short and long term.

    Also writes paired per-split differences of MASC against the fixed-price strategic and naive
    baselines and the mean |short - long| gap.

    Parameters
    ----------
    ctx : RunContext
        Output folder, seed and ``--quick``.
    """
    exponents = [2, 6, 10] if ctx.quick else [2, 4, 6, 8, 10]
    splits = 2 if ctx.quick else 10
    n, epochs = (300, 10) if ctx.quick else (600, 15)
    per_split: dict[str, dict[str, list[list[float]]]] = {m: {"short": [], "long": []} for m in METHODS}
    for exponent in progress(exponents, desc="inequality"):
        level: dict[str, dict[str, list[float]]] = {m: {"short": [], "long": []} for m in METHODS}
        for split in range(splits):
            data = make_market_data(
                n,
                inequality=2.0**exponent,
                label_correlation=0.5,
                feature_signal=0.0,
                random_state=ctx.seed * 1000 + split,
            )
            for name, report in evaluate(data, random_state=split, epochs=epochs).items():
                level[name]["short"].append(report.accuracy_short)
                level[name]["long"].append(report.accuracy_long)
        for name in METHODS:
            for term in ("short", "long"):
                per_split[name][term].append(level[name][term])
    results = {
        name: {term: [_mean_se(values) for values in per_split[name][term]] for term in ("short", "long")}
        for name in METHODS
    }
    paired: dict[str, list[dict[str, float]]] = {}
    for label, (a, b) in PAIRED.items():
        pair_rows: list[dict[str, float]] = []
        for i in range(len(exponents)):
            diff = np.asarray(per_split[a]["long"][i]) - np.asarray(per_split[b]["long"][i])
            pair_rows.append(
                {
                    "mean": _mean_se(diff)[0],
                    "se": _mean_se(diff)[1],
                    "wins": int(np.sum(diff > 0)),
                    "ties": int(np.sum(diff == 0)),
                    "losses": int(np.sum(diff < 0)),
                }
            )
        paired[label] = pair_rows
    gaps: dict[str, list[tuple[float, float]]] = {}
    for name in ("strategic, fixed price", "market-aware (MASC)"):
        gaps[name] = [
            _mean_se(np.abs(np.asarray(per_split[name]["short"][i]) - np.asarray(per_split[name]["long"][i])))
            for i in range(len(exponents))
        ]
    payload = {
        "exponents": exponents,
        "splits": splits,
        "n_users": n,
        "epochs": epochs,
        "label_correlation": 0.5,
        "feature_signal": 0.0,
        "data_seeds": [ctx.seed * 1000 + s for s in range(splits)],
        "results": results,
        "paired_long_term": paired,
        "short_long_gap": gaps,
        "per_split": per_split,
    }
    stored = ctx.write_json(payload)
    head = "| method | term | " + " | ".join(f"2^{e}" for e in exponents) + " |"
    rule = "|" + "---|" * (len(exponents) + 2)
    rows: list[str] = [head, rule]
    for name, terms in results.items():
        for term, series in terms.items():
            rows.append(f"| {name} | {term} | " + " | ".join(f"{m:.3f} ± {s:.3f}" for m, s in series) + " |")
    rows += [
        "",
        f"Paired per-split differences of long-term accuracy (mean ± s.e. over {splits} splits; wins/ties/losses):",
        "",
        head.replace("method | term", "difference | "),
        rule,
    ]
    for label, pair_series in paired.items():
        rows.append(
            f"| {label} | | "
            + " | ".join(f"{r['mean']:+.3f} ± {r['se']:.3f} ({r['wins']}/{r['ties']}/{r['losses']})" for r in pair_series)
            + " |"
        )
    rows += ["", "Mean |short - long| accuracy gap:", "", head.replace("method | term", "method | "), rule]
    for name, series in gaps.items():
        rows.append(f"| {name} | | " + " | ".join(f"{m:.3f} ± {s:.3f}" for m, s in series) + " |")
    ctx.write_table("\n".join(rows))
    ctx.save_figure(reproduce_figure(json.loads(stored.read_text())))  # drawn from what is stored


def reproduce_figure(result: dict[str, Any]) -> Any:
    """The reproduce figure, drawn from its JSON (``results/reproduce.json``) alone.

    Parameters
    ----------
    result : dict
        What ``reproduce`` writes: per method and term the mean and standard error of test accuracy over the
        splits at each budget inequality, and the paired long-term differences.

    Returns
    -------
    matplotlib.figure.Figure
        Short-term and long-term accuracy against budget inequality, and the paired long-term differences.
    """
    import matplotlib.pyplot as plt

    exponents, splits = result["exponents"], result["splits"]
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.2), layout="constrained")
    for ax, term in zip(axes[:2], ("short", "long"), strict=True):
        for name, terms in result["results"].items():
            means = np.array([m for m, _ in terms[term]])
            errors = np.array([s for _, s in terms[term]])
            ax.errorbar(exponents, means, yerr=errors, marker="o", capsize=3, label=name)
        ax.set_xlabel("budget inequality log2(b_max / b_min)")
        ax.set_ylabel("test accuracy (mean ± s.e.)")
        ax.set_title(f"{term} term")
        ax.set_ylim(0.4, 1.0)
    axes[1].legend(fontsize=7)
    for label, pair_series in result["paired_long_term"].items():
        axes[2].errorbar(exponents, [r["mean"] for r in pair_series], yerr=[r["se"] for r in pair_series],
                         marker="o", capsize=3, label=label)
    axes[2].axhline(0.0, color="grey", lw=0.5)
    axes[2].set_xlabel("budget inequality log2(b_max / b_min)")
    axes[2].set_ylabel("long-term accuracy difference (mean ± s.e.)")
    axes[2].set_title("paired long-term difference")
    axes[2].legend(fontsize=7)
    fig.suptitle(f"{result['n_users']} users, {splits} splits (one data seed each), {result['epochs']} epochs; "
                 "error bars: standard error over the splits", fontsize=9)
    return fig
