"""The ``demo`` and ``reproduce`` commands.

``demo`` compares penalty choices on two real series (Mauna Loa CO2 and sunspots, from statsmodels, the
``demo`` extra); ``reproduce`` runs the paper's synthetic experiment (risk against T under weak and strong
correlation, a penalty sweep and the correlated test point).
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from icml25_shared.cli import RunContext, progress
from icml25_shared.random import child_seeds
from icml25_shared.stats import mean_sd
from icml25_shared.tables import markdown_table

from corrgcv.correlation import Correlation, ExponentialCorrelation
from corrgcv.estimator import RidgeCorrGCV
from corrgcv.simulate import power_law_problem, simulate_horizon_risk, simulate_risk
from corrgcv.theory import deterministic_equivalent, horizon_factor

log = logging.getLogger(__name__)

DEMO_ALPHAS = np.logspace(-2, 5, 29)



def _parameter(correlation: Correlation | None) -> float:
    """The fitted family's parameter (xi for the exponential family); the experiments always fit a family."""
    if correlation is None:
        raise ValueError("no correlation family was fitted")
    return correlation.parameter

def co2_forecasting_design(horizon: int, n_lags: int) -> tuple[np.ndarray, np.ndarray]:
    """Direct ``horizon``-week-ahead forecasting of Mauna Loa CO2 (statsmodels' bundled weekly series, 1958-2001, public domain; 59 missing weeks linearly interpolated).

    Row t: features are the last ``n_lags`` weekly changes, target the change over the next
    ``horizon`` weeks (ppm). Overlapping targets make neighbouring rows strongly correlated.
    """
    try:
        from statsmodels.datasets import co2
    except ImportError as err:  # pragma: no cover - exercised only without the extra
        raise ImportError("the demo needs statsmodels' bundled datasets: pip install 'corrgcv[demo]'") from err
    series = co2.load_pandas().data["co2"].interpolate().to_numpy(dtype=float)
    steps = np.diff(series)
    times = np.arange(n_lags + 1, series.size - horizon)
    X = np.stack([steps[t - n_lags : t][::-1] for t in times])
    y = series[times + horizon] - series[times]
    return X, y


def sunspots_forecasting_design(horizon: int, n_lags: int) -> tuple[np.ndarray, np.ndarray]:
    """Direct ``horizon``-year-ahead forecasting of the yearly sunspot number (statsmodels' bundled series, 1700-2008, 309 values, public domain).

    Row t: features are the last ``n_lags`` yearly levels (not changes), target the level ``horizon``
    years later. Levels follow the ~11-year cycle, so neighbouring rows of X are strongly correlated.
    """
    try:
        from statsmodels.datasets import sunspots
    except ImportError as err:  # pragma: no cover - exercised only without the extra
        raise ImportError("the demo needs statsmodels' bundled datasets: pip install 'corrgcv[demo]'") from err
    series = sunspots.load_pandas().data["SUNACTIVITY"].to_numpy(dtype=float)
    times = np.arange(n_lags - 1, series.size - horizon)
    X = np.stack([series[t - n_lags + 1 : t + 1][::-1] for t in times])
    y = series[times + horizon]
    return X, y


DESIGNS = {"co2": co2_forecasting_design, "sunspots": sunspots_forecasting_design}
# Fixed before any held-out result was looked at: horizons and number of lags per series.
DEMO_SERIES: dict[str, dict[str, Any]] = {"co2": dict(horizons=(13, 26, 52), n_lags=104), "sunspots": dict(horizons=(1, 3, 6), n_lags=22)}


def _held_out(X: np.ndarray, y: np.ndarray, horizon: int, train_fraction: float) -> tuple[np.ndarray, ...]:
    cut = int(train_fraction * len(y))
    # Skip `horizon` rows after the cut so no test target overlaps a training target.
    return X[:cut], y[:cut], X[cut + horizon :], y[cut + horizon :]


@dataclass(frozen=True)
class PenaltyCurves:
    """One series and horizon along the penalty grid: each criterion's error estimate, the held-out MSE of the refit at every penalty, and the fitted selectors (RidgeCV, RidgeCorrGCV with the default estimate)."""

    series: str
    horizon: int
    alphas: np.ndarray
    held_out: np.ndarray
    loo: np.ndarray
    gcv: np.ndarray
    corrgcv: np.ndarray
    ridge_cv: Any = field(repr=False)
    ridge_corrgcv: RidgeCorrGCV = field(repr=False)
    split: tuple[np.ndarray, ...] = field(repr=False)

    def held_out_at(self, alpha: float) -> float:
        """Held-out MSE at the grid penalty nearest to ``alpha`` (on a log scale)."""
        return float(self.held_out[int(np.argmin(np.abs(np.log(self.alphas / alpha))))])


def penalty_curves(
    series: str, horizon: int, n_lags: int, *, alphas: np.ndarray = DEMO_ALPHAS, train_fraction: float = 0.7
) -> PenaltyCurves:
    """Fit RidgeCV (LOO) and RidgeCorrGCV (default estimate) on the training span of ``series`` and score a ridge refit at every penalty on the held-out span."""
    from sklearn.linear_model import Ridge, RidgeCV

    X, y = DESIGNS[series](horizon, n_lags)
    Xtr, ytr, Xte, yte = _held_out(X, y, horizon, train_fraction)
    loo = RidgeCV(alphas=alphas, store_cv_results=True).fit(Xtr, ytr)
    corr = RidgeCorrGCV(alphas=alphas, correlation="exponential").fit(Xtr, ytr)
    held = [float(np.mean((Ridge(alpha=a).fit(Xtr, ytr).predict(Xte) - yte) ** 2)) for a in alphas]
    return PenaltyCurves(
        series,
        horizon,
        np.asarray(alphas),
        np.array(held),
        loo.cv_results_.mean(0),
        corr.gcv_path_.criterion,
        corr.cv_path_.criterion,
        loo,
        corr,
        (Xtr, ytr, Xte, yte),
    )


def compare_penalty_choices(
    horizon: int,
    n_lags: int,
    *,
    alphas: np.ndarray = DEMO_ALPHAS,
    train_fraction: float = 0.7,
    time_series_split: bool = True,
    series: str = "co2",
) -> list[dict[str, Any]]:
    """Penalty chosen by RidgeCV (LOO), GCV, RidgeCorrGCV (exponential K estimated by the default rule "both", by "features" and by "residuals") and, optionally, GridSearchCV with TimeSeriesSplit(gap=horizon); each refit on the training span and scored on the later held-out span.

    Rows: method, alpha, criterion, held-out MSE.
    """
    from sklearn.linear_model import Ridge
    from sklearn.model_selection import GridSearchCV, TimeSeriesSplit

    curves = penalty_curves(series, horizon, n_lags, alphas=alphas, train_fraction=train_fraction)
    Xtr, ytr, Xte, yte = curves.split

    def mse(model: Any) -> float:
        return float(np.mean((model.predict(Xte) - yte) ** 2))

    loo = curves.ridge_cv
    rows = [
        dict(method="RidgeCV (LOO)", alpha=float(loo.alpha_), estimate=float(-loo.best_score_), held_out_mse=mse(loo))
    ]
    plain = RidgeCorrGCV(alphas=alphas, correlation="independent").fit(Xtr, ytr)
    rows.append(dict(method="GCV (K = I)", alpha=plain.alpha_, estimate=plain.best_score_, held_out_mse=mse(plain)))
    names = {
        "both": "RidgeCorrGCV",
        "features": "RidgeCorrGCV, features estimate",
        "residuals": "RidgeCorrGCV, residual estimate",
    }
    for estimate, name in names.items():
        corr = (
            curves.ridge_corrgcv
            if estimate == "both"
            else RidgeCorrGCV(alphas=alphas, correlation="exponential", estimate=estimate).fit(Xtr, ytr)
        )
        detail = f"xi={_parameter(corr.correlation_):.3g}"
        if estimate == "both":
            detail = (
                f"xi={_parameter(corr.correlation_):.3g}: features {_parameter(corr.feature_correlation_):.3g}, "
                f"noise {_parameter(corr.noise_correlation_):.3g}"
            )
        rows.append(
            dict(
                method=f"{name} (exponential, {detail})",
                alpha=corr.alpha_,
                estimate=corr.best_score_,
                held_out_mse=mse(corr),
                xi=_parameter(corr.correlation_),
            )
        )
    if time_series_split:
        tss = GridSearchCV(
            Ridge(), {"alpha": alphas}, cv=TimeSeriesSplit(5, gap=horizon), scoring="neg_mean_squared_error"
        ).fit(Xtr, ytr)
        rows.append(
            dict(
                method="TimeSeriesSplit(5, gap=h) grid search",
                alpha=float(tss.best_params_["alpha"]),
                estimate=float(-tss.best_score_),
                held_out_mse=mse(tss),
            )
        )
    best = int(np.argmin(curves.held_out))
    rows.append(
        dict(
            method="oracle (best alpha on held-out)",
            alpha=float(alphas[best]),
            estimate=float("nan"),
            held_out_mse=float(curves.held_out[best]),
        )
    )
    for row in rows:
        row.update(series=series, horizon=horizon, n_lags=n_lags, n_train=len(ytr), n_test=len(yte))
    return rows


def demo(ctx: RunContext) -> None:
    """Direct forecasting on two real series (Mauna Loa CO2 weekly changes; yearly sunspot levels) at several horizons: which penalty does each criterion pick, and how does the refit do on the held-out later span? Series, horizons and lags are fixed in ``DEMO_SERIES``."""
    import matplotlib.pyplot as plt

    if ctx.quick:
        plan = [("co2", 13, 52)]
    else:
        plan = [(name, h, spec["n_lags"]) for name, spec in DEMO_SERIES.items() for h in spec["horizons"]]
    rows: list[dict[str, Any]] = []
    for series, h, n_lags in progress(plan, desc="series x horizon", enabled=not ctx.quick):
        rows += compare_penalty_choices(h, n_lags, time_series_split=not ctx.quick, series=series)
    units = {"co2": ("wk", "ppm^2"), "sunspots": ("yr", "(sunspot number)^2")}
    table = [
        [
            r["series"],
            f"{r['horizon']} {units[r['series']][0]}",
            r["method"],
            f"{r['alpha']:.3g}",
            None if np.isnan(r["estimate"]) else r["estimate"],
            f"{r['held_out_mse']:.4g} {units[r['series']][1]}",
        ]
        for r in rows
    ]
    headers = ["series", "horizon", "method", "alpha", "criterion's error estimate", "held-out MSE"]
    lines = [markdown_table(table, headers)]
    lines.append("")
    lines.append(
        "co2: Mauna Loa weekly CO2 (statsmodels), features: last n_lags weekly changes, target: change "
        "over the next h weeks. sunspots: yearly sunspot number (statsmodels), features: last 22 yearly "
        "levels, target: the level h years later. First 70% of rows train, the rest (after an h-row "
        "gap) held out."
    )
    ctx.write_table("\n".join(lines))
    ctx.write_json({"rows": rows, "alphas": DEMO_ALPHAS, "series": DEMO_SERIES})

    # Figure: each criterion's error estimate and the held-out MSE along the grid, one panel per series x horizon.
    ncols = min(3, len(plan))
    nrows = -(-len(plan) // ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(4.2 * ncols, 3.4 * nrows), squeeze=False)
    for ax, (series, h, n_lags) in zip(axes.flat, plan, strict=False):
        curves = penalty_curves(series, h, n_lags)
        ax.loglog(curves.alphas, curves.held_out, "k-", lw=2, label="held-out MSE")
        ax.loglog(curves.alphas, curves.corrgcv, "C0-", label="CorrGCV (K estimated)")
        ax.loglog(curves.alphas, curves.gcv, "C1--", label="GCV")
        ax.loglog(curves.alphas, curves.loo, "C2:", label="LOO (RidgeCV)")
        for alpha, color in ((curves.ridge_corrgcv.alpha_, "C0"), (curves.ridge_cv.alpha_, "C2")):
            ax.axvline(alpha, color=color, alpha=0.4)
        unit = units[series]
        ax.set_title(f"{series}, h = {h} {unit[0]}", fontsize=9)
        ax.set_xlabel("alpha")
        ax.set_ylabel(f"squared error ({unit[1]})", fontsize=8)
    for ax in list(axes.flat)[len(plan) :]:
        ax.set_visible(False)
    axes.flat[0].legend(fontsize=7)
    fig.suptitle("Error estimates vs held-out error; vertical lines: chosen penalties", fontsize=10)
    fig.tight_layout()
    ctx.save_figure(fig)


def reproduce(ctx: RunContext) -> None:
    """Risk against T for weak (xi=0.01, lambda=1e-2) and strong (xi=100, lambda=1e-4) exponential correlation: simulated out-of-sample risk, CorrGCV, GCV and the deterministic equivalent; plus the penalty sweep at T=150 and the correlated-test-point factor."""
    start = time.perf_counter()
    problem = power_law_problem(100, capacity=1.8, source=0.3, noise_std=0.05)
    Ts = np.unique(np.round(np.logspace(1, 2.5, 4) if ctx.quick else np.logspace(1, 3, 15)).astype(int))
    # Independent replicate seeds from one root: --seed 0 and --seed 1 share no training set.
    seeds = child_seeds(ctx.seed, 3 if ctx.quick else 10)
    regimes = {"weak": (0.01, 1e-2), "strong": (100.0, 1e-4)}
    out: dict[str, Any] = {
        "N": 100,
        "capacity": 1.8,
        "source": 0.3,
        "noise_std": 0.05,
        "T": Ts,
        "n_seeds": len(seeds),
        "seed": ctx.seed,
        "regimes": {},
    }
    for name, (xi, lam) in regimes.items():
        corr = ExponentialCorrelation(xi=xi)
        rec: dict[str, list[float]] = {k: [] for k in ("risk", "risk_sem", "corrgcv", "gcv", "theory")}
        for T in progress(Ts, desc=name, enabled=not ctx.quick):
            sim = simulate_risk(problem, corr, int(T), lam * T, seeds=seeds)
            de = deterministic_equivalent(
                problem.spectrum,
                problem.target,
                n_samples=int(T),
                ridge=lam,
                K=corr,
                noise_variance=problem.noise_std**2,
            )
            r = mean_sd(sim.out_of_sample_risk[:, 0])
            rec["risk"].append(r.mean)
            rec["risk_sem"].append(r.sd / np.sqrt(r.n) if r.n > 1 else 0.0)
            rec["corrgcv"].append(float(sim.corrgcv[:, 0].mean()))
            rec["gcv"].append(float(sim.gcv[:, 0].mean()))
            rec["theory"].append(float(de.out_of_sample_risk[0]))
        rec["corrgcv_over_risk"] = list(np.array(rec["corrgcv"]) / np.array(rec["risk"]))
        rec["gcv_over_risk"] = list(np.array(rec["gcv"]) / np.array(rec["risk"]))
        rec["theory_over_risk"] = list(np.array(rec["theory"]) / np.array(rec["risk"]))
        out["regimes"][name] = {"xi": xi, "lambda": lam, **rec}

    # Penalty sweep, strong regime, T = 150 (noise 0.3 so that the best penalty is interior).
    sweep_problem = power_law_problem(100, capacity=1.8, source=0.3, noise_std=0.3)
    lambdas = np.logspace(-5, 1, 13 if ctx.quick else 25)
    sweep = simulate_risk(sweep_problem, ExponentialCorrelation(xi=100.0), 150, lambdas * 150, seeds=seeds)
    out["sweep"] = {
        "T": 150,
        "noise_std": 0.3,
        "lambda": lambdas,
        "risk": sweep.out_of_sample_risk.mean(0),
        "corrgcv": sweep.corrgcv.mean(0),
        "gcv": sweep.gcv.mean(0),
        "argmin": {
            k: float(lambdas[int(np.argmin(getattr(sweep, a).mean(0)))])
            for k, a in (("risk", "out_of_sample_risk"), ("corrgcv", "corrgcv"), ("gcv", "gcv"))
        },
    }

    # Correlated test point at horizon tau (T = 100, xi = 100, lambda = 1e-4).
    taus = np.arange(1, 51)
    corr = ExponentialCorrelation(xi=100.0)
    de = deterministic_equivalent(
        problem.spectrum, problem.target, n_samples=100, ridge=1e-4, K=corr, noise_variance=problem.noise_std**2
    )
    sim_ratio = simulate_horizon_risk(
        problem, corr, 100, 1e-4 * 100, taus, seeds=child_seeds(ctx.seed, 10 if ctx.quick else 100)
    )
    theory_ratio = horizon_factor(corr, 100, taus, de.kappa_tilde[0])
    out["test_point"] = {
        "tau": taus,
        "simulated": sim_ratio,
        "theory": theory_ratio,
        "max_rel_error": float(np.max(np.abs(sim_ratio / theory_ratio - 1))),
        "n_seeds": 10 if ctx.quick else 100,
    }
    out["seconds"] = time.perf_counter() - start
    stored = ctx.write_json(out)

    ctx.save_figure(reproduce_figure(json.loads(stored.read_text())))  # drawn from what is stored


def reproduce_figure(result: dict[str, Any]) -> Any:
    """The reproduce figure, drawn from its JSON (``results/reproduce.json``) alone.

    Parameters
    ----------
    result : dict
        What ``reproduce`` writes: the risk curves of both regimes against ``T``, the penalty ``sweep`` and
        the correlated ``test_point``.

    Returns
    -------
    matplotlib.figure.Figure
        Four panels: risk against T (weak, strong), risk against the penalty, and the horizon factor.
    """
    import matplotlib.pyplot as plt

    Ts, sweep, point = result["T"], result["sweep"], result["test_point"]
    fig, axes = plt.subplots(1, 4, figsize=(17, 4.2), layout="constrained")
    for ax, name in zip(axes[:2], ("weak", "strong"), strict=True):
        rec = result["regimes"][name]
        ax.errorbar(Ts, rec["risk"], yerr=rec["risk_sem"], fmt="ko", ms=4, label="out-of-sample risk (sim.)")
        ax.plot(Ts, rec["theory"], "k-", lw=1, label="deterministic equivalent")
        ax.plot(Ts, rec["corrgcv"], "C0s--", ms=4, label="CorrGCV")
        ax.plot(Ts, rec["gcv"], "C1^:", ms=4, label="GCV")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("T (training samples)")
        ax.set_ylabel("risk (mean squared error)")
        ax.set_title(f"{name}: xi={rec['xi']:g}, lambda={rec['lambda']:g}")
    axes[0].legend(fontsize=7)
    axes[2].loglog(sweep["lambda"], sweep["risk"], "k-", label="risk (sim.)")
    axes[2].loglog(sweep["lambda"], sweep["corrgcv"], "C0--", label="CorrGCV")
    axes[2].loglog(sweep["lambda"], sweep["gcv"], "C1:", label="GCV")
    axes[2].set_xlabel("ridge penalty lambda")
    axes[2].set_ylabel("risk (mean squared error)")
    axes[2].set_title(f"strong, T={sweep['T']}: penalty sweep")
    axes[2].legend(fontsize=7)
    seeds = f" ({point['n_seeds']} seeds)" if "n_seeds" in point else ""
    axes[3].plot(point["tau"], point["simulated"], "ko", ms=3, label=f"simulated{seeds}")
    axes[3].plot(point["tau"], point["theory"], "C0-", label="theory")
    axes[3].set_xlabel("horizon tau (steps)")
    axes[3].set_ylabel("R(tau) / R(inf)")
    axes[3].set_title("correlated test point (T=100, xi=100)")
    axes[3].legend(fontsize=7)
    root = f", root seed {result['seed']}" if "seed" in result else ""
    fig.suptitle(f"means over {result['n_seeds']} seeds (error bars: standard error){root}", fontsize=9)
    return fig
