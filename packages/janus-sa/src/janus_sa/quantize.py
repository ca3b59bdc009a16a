"""Fixed-point quantisation with the clip range, number of levels and modulus as explicit parameters.

The parameter names mirror Flower's SecAgg+ (``clipping_range``, ``quantization_range``,
``modulus_range``). Values are clipped to ``[-c, c]`` and mapped to integers in
``[0, quantization_range)``; sums are taken modulo ``modulus_range``. The aggregate of ``n`` clients
is exact as long as ``n * (quantization_range - 1) < modulus_range``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from icml25_shared.validation import Interval

from janus_sa._validation import validate
from janus_sa.errors import ConfigError


@dataclass(frozen=True)
class Quantizer:
    """Deterministic round-to-nearest fixed-point codec.

    Parameters
    ----------
    clipping_range : float, default 8.0
        ``c > 0``; inputs are clipped to ``[-c, c]`` before quantisation.
    quantization_range : int, default 2**22
        Number of integer levels ``Q >= 2``; codes lie in ``[0, Q)``.
    modulus_range : int, default 2**32
        Modulus ``M`` of the masked arithmetic, a power of two in ``[2**8, 2**32]``.
    """

    clipping_range: float = 8.0
    quantization_range: int = 1 << 22
    modulus_range: int = 1 << 32

    def validate(self) -> Quantizer:
        """Check the ranges; raise :class:`ConfigError` naming the bad one. Returns ``self``."""
        c, q, m = self.clipping_range, self.quantization_range, self.modulus_range
        validate({"clipping_range": c, "modulus_range": m},
                 {"clipping_range": [Interval(float, 0, None, closed="neither")],
                  "modulus_range": [Interval(int, 2**8, 2**32)]}, owner="Quantizer")
        if not np.isfinite(c):
            raise ConfigError(f"Quantizer: clipping_range must be a finite float > 0; got {c!r}")
        if m & (m - 1):
            raise ConfigError(f"Quantizer: modulus_range must be a power of two in [2**8, 2**32]; got {m!r}")
        validate({"quantization_range": q}, {"quantization_range": [Interval(int, 2, m)]}, owner="Quantizer")
        return self

    @property
    def step(self) -> float:
        """Width of one quantisation level, in input units."""
        return 2.0 * self.clipping_range / (self.quantization_range - 1)

    @property
    def max_clients(self) -> int:
        """Largest number of summands whose aggregate cannot wrap around the modulus."""
        return (self.modulus_range - 1) // (self.quantization_range - 1)

    def error_bound(self, n: int) -> float:
        """Worst-case absolute error per coordinate of a dequantised sum of ``n`` unclipped inputs.

        Valid when every summand is a code in ``[0, quantization_range)``: always with
        ``JanusConfig(range_proof=True)`` (each client proves it), otherwise only for honest clients (a
        malicious participant's out-of-range codes pass verification as long as the sum stays in
        ``[0, n (Q - 1)]``, and the sum can then be off by far more than this bound).
        """
        return n * self.step / 2.0

    def check_capacity(self, n: int) -> None:
        """Raise :class:`ConfigError` when ``n`` codes could wrap around the modulus."""
        if n > self.max_clients:
            raise ConfigError(
                f"{n} clients overflow the modulus: n * (quantization_range - 1) must stay below "
                f"modulus_range; at most {self.max_clients} clients fit these settings")

    def quantize(self, x: np.ndarray) -> np.ndarray:
        """Float vector ``(l,)`` -> uint32 codes ``(l,)`` in ``[0, quantization_range)``."""
        self.validate()
        x = np.asarray(x, dtype=np.float64)
        if x.ndim != 1:
            raise ConfigError(f"updates must be 1-D vectors, got shape {x.shape}")
        if not np.all(np.isfinite(x)):
            raise ConfigError("updates must be finite (found NaN or inf)")
        c = float(self.clipping_range)
        codes = np.rint((np.clip(x, -c, c) + c) / self.step)
        return np.clip(codes, 0, self.quantization_range - 1).astype(np.uint32)

    def dequantize_sum(self, total: np.ndarray, n: int) -> np.ndarray:
        """Integer sum of ``n`` codes -> float sum of the ``n`` (clipped) inputs."""
        return np.asarray(total, dtype=np.float64) * self.step - n * float(self.clipping_range)
