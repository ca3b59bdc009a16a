"""Activation-space mappers that carry steering interventions from a small language model to a larger one.

The public API is listed in ``__all__``; torch and transformers are imported when a name is first used.
"""

from importlib import import_module
from importlib.metadata import PackageNotFoundError, version
from typing import TYPE_CHECKING, Any

try:
    __version__ = version("safety-transfer")
except PackageNotFoundError:  # source tree without install
    __version__ = "0.0.0"

if TYPE_CHECKING:  # static imports for type checkers and the API docs; at run time __getattr__ imports lazily
    from safety_transfer.activations import (
        ActivationPairs,
        Activations,
        ActivationShards,
        align_offsets,
        collect_activations,
        collect_pairs,
    )
    from safety_transfer.hooks import (
        LAYER_PATHS,
        ablate_direction,
        add_vector,
        check_layer,
        decoder_layers,
        hidden_size,
        num_layers,
        read_layer,
        replace_layer,
    )
    from safety_transfer.mappers import (
        AffineMapper,
        AutoEncoderMapper,
        MappingMetrics,
        load_mapper,
        mapping_metrics,
    )
    from safety_transfer.metrics import SubstitutionMetrics, generate, lm_loss, substitution_metrics, trigger_rate
    from safety_transfer.models import bpe_tokenizer, byte_tokenizer, load_local_model, tiny_causal_lm
    from safety_transfer.steering import (
        SteeringVector,
        SweepResult,
        diff_in_means,
        pca_direction,
        steering_vector,
        sweep,
    )
    from safety_transfer.switch import SafetySwitch, TriggerProbe
    from safety_transfer.transfer import (
        check_mapper,
        mapped_replacement,
        mapped_vector,
        pad_or_truncate,
        random_like,
        refine_with_lm_loss,
    )

_WHERE = {
    "ActivationPairs": "activations",
    "ActivationShards": "activations",
    "Activations": "activations",
    "align_offsets": "activations",
    "collect_activations": "activations",
    "collect_pairs": "activations",
    "LAYER_PATHS": "hooks",
    "ablate_direction": "hooks",
    "add_vector": "hooks",
    "check_layer": "hooks",
    "decoder_layers": "hooks",
    "hidden_size": "hooks",
    "num_layers": "hooks",
    "read_layer": "hooks",
    "replace_layer": "hooks",
    "AffineMapper": "mappers",
    "AutoEncoderMapper": "mappers",
    "MappingMetrics": "mappers",
    "load_mapper": "mappers",
    "mapping_metrics": "mappers",
    "SubstitutionMetrics": "metrics",
    "generate": "metrics",
    "lm_loss": "metrics",
    "substitution_metrics": "metrics",
    "trigger_rate": "metrics",
    "bpe_tokenizer": "models",
    "byte_tokenizer": "models",
    "load_local_model": "models",
    "tiny_causal_lm": "models",
    "SteeringVector": "steering",
    "SweepResult": "steering",
    "diff_in_means": "steering",
    "pca_direction": "steering",
    "steering_vector": "steering",
    "sweep": "steering",
    "SafetySwitch": "switch",
    "TriggerProbe": "switch",
    "check_mapper": "transfer",
    "mapped_replacement": "transfer",
    "mapped_vector": "transfer",
    "pad_or_truncate": "transfer",
    "random_like": "transfer",
    "refine_with_lm_loss": "transfer",
}

__all__ = [
    "__version__",
    "ActivationPairs",
    "ActivationShards",
    "Activations",
    "AffineMapper",
    "AutoEncoderMapper",
    "MappingMetrics",
    "LAYER_PATHS",
    "SafetySwitch",
    "SteeringVector",
    "SubstitutionMetrics",
    "SweepResult",
    "TriggerProbe",
    "ablate_direction",
    "add_vector",
    "align_offsets",
    "bpe_tokenizer",
    "byte_tokenizer",
    "check_layer",
    "check_mapper",
    "collect_activations",
    "collect_pairs",
    "decoder_layers",
    "diff_in_means",
    "generate",
    "hidden_size",
    "lm_loss",
    "load_local_model",
    "load_mapper",
    "mapped_replacement",
    "mapped_vector",
    "mapping_metrics",
    "num_layers",
    "pad_or_truncate",
    "pca_direction",
    "random_like",
    "read_layer",
    "refine_with_lm_loss",
    "replace_layer",
    "steering_vector",
    "substitution_metrics",
    "sweep",
    "tiny_causal_lm",
    "trigger_rate",
]


def __getattr__(name: str) -> Any:
    if name in _WHERE:
        return getattr(import_module(f"safety_transfer.{_WHERE[name]}"), name)
    raise AttributeError(f"module 'safety_transfer' has no attribute {name!r}")
