"""EquiGX: layer-wise relevance propagation for e3nn equivariant graph networks (Ling et al., ICML 2025).

``EquiGX(model).explain(graphs)`` gives node, edge-direction and edge-distance relevance of an e3nn
network built from the parts in :mod:`equigx.models`; :mod:`equigx.rules` holds the relevance rules,
:mod:`equigx.baselines` the gradient-based explainers, :mod:`equigx.metrics` AUROC and fidelity and
:mod:`equigx.data` the Shapes and Spiral Noise sets.
"""

from importlib import import_module
from importlib.metadata import PackageNotFoundError, version
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from equigx.explain import Attribution, EquiGX, Explanation
    from equigx.graphs import Geometry, Graphs, radius_graph
    from equigx.models import TFN, Convolution, SumPool

# torch and e3nn load on first use, so that ``import equigx`` and ``python -m equigx --help`` stay fast
_LAZY = {"Attribution": "explain", "EquiGX": "explain", "Explanation": "explain", "Geometry": "graphs",
         "Graphs": "graphs", "radius_graph": "graphs", "TFN": "models", "Convolution": "models", "SumPool": "models"}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        value = getattr(import_module(f"equigx.{_LAZY[name]}"), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'equigx' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))

try:
    __version__ = version("equigx")
except PackageNotFoundError:  # source tree without install
    __version__ = "0.0.0"

__all__ = ["TFN", "Attribution", "Convolution", "EquiGX", "Explanation", "Geometry", "Graphs", "SumPool",
           "__version__", "radius_graph"]
