"""Can any correlation matrix K consistent with the training data make RidgeCorrGCV as good as RidgeCV on the
demo's sunspots series? Prints markdown.

For each horizon h of the demo (same design, split and 29-penalty grid as ``python -m corrgcv demo``):

- the lag-1..6 autocorrelation of the least-squares residuals on the training span (direct h-step targets
  overlap, so the errors are MA(h-1), Hansen and Hodrick 1980);
- the penalty and held-out MSE chosen by RidgeCV (LOO), GCV (K = I), RidgeCorrGCV's default estimate, each K
  family over a sweep of its parameter, and a nonparametric Toeplitz K built from that residual ACF up to lag
  h - 1 with Bartlett weights (positive definite by construction).

Only training data enter every K; the held-out span is used only to score the chosen penalty.
"""

from __future__ import annotations

import numpy as np
from scipy.linalg import toeplitz

from corrgcv import RidgeCorrGCV
from corrgcv.experiments import DEMO_ALPHAS, DEMO_SERIES, penalty_curves

SWEEPS = {
    "exponential": (0.1, 0.5, 1.0, 2.0, 3.0, 5.0),
    "nearest-neighbour": (0.1, 0.3, 0.49),
    "power-law": (3.0, 2.0, 1.0, 0.5),
}


def residual_acf(X: np.ndarray, y: np.ndarray, max_lag: int) -> np.ndarray:
    """Sample autocorrelation (biased, divided by T) of the least-squares residuals with an intercept."""
    design = np.column_stack([np.ones(len(y)), X])
    resid = y - design @ np.linalg.lstsq(design, y, rcond=None)[0]
    resid = resid - resid.mean()
    return np.array([resid[: len(resid) - k] @ resid[k:] for k in range(max_lag + 1)]) / (resid @ resid)


def bartlett_toeplitz(acf: np.ndarray, T: int) -> np.ndarray:
    """Toeplitz K from ``acf[0..q]`` tapered by Bartlett weights 1 - k/(q+1), zero beyond lag q."""
    q = len(acf) - 1
    first = np.zeros(T)
    first[: q + 1] = acf * (1 - np.arange(q + 1) / (q + 1))
    return toeplitz(first)


def main() -> None:
    n_lags = DEMO_SERIES["sunspots"]["n_lags"]
    print("| h | residual ACF lags 1-6 | rule | alpha | held-out MSE | vs RidgeCV |")
    print("|---|---|---|---|---|---|")
    for h in DEMO_SERIES["sunspots"]["horizons"]:
        curves = penalty_curves("sunspots", h, n_lags)
        Xtr, ytr = curves.split[:2]
        acf = residual_acf(Xtr, ytr, 6)
        acf_text = " ".join(f"{v:+.2f}" for v in acf[1:])
        ridge_cv = float(curves.ridge_cv.alpha_)
        choices = [("RidgeCV (LOO)", ridge_cv), ("GCV (K = I)", _alpha(Xtr, ytr, "independent"))]
        default = curves.ridge_corrgcv
        choices.append((f"default estimate (exponential xi={default.correlation_.xi:.2f})", default.alpha_))
        for family, params in SWEEPS.items():
            choices += [(f"{family} {p:g}", _alpha(Xtr, ytr, family, p)) for p in params]
        K = bartlett_toeplitz(residual_acf(Xtr, ytr, max(h - 1, 0)), len(ytr))
        choices.append((f"Toeplitz from residual ACF, lags 0..{h - 1}, Bartlett", _alpha(Xtr, ytr, K)))
        for i, (rule, alpha) in enumerate(choices):
            mse = curves.held_out_at(alpha)
            print(
                f"| {h if i == 0 else ''} | {acf_text if i == 0 else ''} | {rule} | {alpha:.3g} | "
                f"{mse:.1f} | {mse / curves.held_out_at(ridge_cv) - 1:+.1%} |"
            )


def _alpha(X: np.ndarray, y: np.ndarray, correlation, param: float | None = None) -> float:
    return float(RidgeCorrGCV(alphas=DEMO_ALPHAS, correlation=correlation, correlation_param=param).fit(X, y).alpha_)


if __name__ == "__main__":
    main()
