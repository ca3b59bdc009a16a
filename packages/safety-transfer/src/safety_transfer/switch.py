"""A safety switch: map a fine-tuned model's activations to its base model's at one layer, on demand."""

from __future__ import annotations

from contextlib import ExitStack
from typing import Any

from torch import nn

from safety_transfer.hooks import check_layer, hidden_size, num_layers, replace_layer
from safety_transfer.transfer import _check_mapper_layers, check_mapper

__all__ = ["SafetySwitch"]


class SafetySwitch:
    """Replace the fine-tuned model's output at ``layer`` by ``mapper(h)`` while the switch is on.

    ``with switch:`` turns it on for the block and back to its state before the block on exit (nested
    blocks keep it on until the outermost one ends). The mapper is fitted on pairs (fine-tuned activations, base activations) at ``layer`` (e.g.
    ``collect_pairs(finetuned, base, ...)``). Off, no hook is registered: the fine-tuned model computes
    bitwise what it computed before.

    Parameters
    ----------
    base, finetuned : transformers.PreTrainedModel
        The two models: same architecture and width.
    mapper : AffineMapper or AutoEncoderMapper
        Fitted from the fine-tuned width to the base width.
    layer : int
        Decoder layer.

    Examples
    --------
    >>> from safety_transfer import AffineMapper, SafetySwitch, tiny_causal_lm
    >>> import torch
    >>> base = tiny_causal_lm("llama", hidden_size=16, num_layers=2, random_state=0)
    >>> ft = tiny_causal_lm("llama", hidden_size=16, num_layers=2, random_state=1)
    >>> eye = AffineMapper().fit(torch.eye(17, 16, dtype=torch.float64), torch.eye(17, 16, dtype=torch.float64))
    >>> switch = SafetySwitch(base, ft, eye, layer=1)
    >>> with switch:
    ...     switch.is_on
    True
    >>> switch.is_on
    False
    """

    def __init__(self, base: nn.Module, finetuned: nn.Module, mapper: Any, layer: int) -> None:
        if type(base) is not type(finetuned):
            raise ValueError(f"base ({type(base).__name__}) and finetuned ({type(finetuned).__name__}) must share "
                             "one architecture")
        if num_layers(base) != num_layers(finetuned):
            raise ValueError(f"base has {num_layers(base)} decoder layers but finetuned has {num_layers(finetuned)}")
        check_mapper(mapper, finetuned, base)
        self.base = base
        self.finetuned = finetuned
        self.mapper = mapper
        self.layer = check_layer(finetuned, layer)
        _check_mapper_layers(mapper, self.layer, self.layer)
        self.width = hidden_size(finetuned)
        self._stack: ExitStack | None = None
        self._entered: list[bool] = []  # per open `with` block: whether the switch was on before it

    @property
    def is_on(self) -> bool:
        """Whether the mapping hook is registered."""
        return self._stack is not None

    def on(self) -> SafetySwitch:
        """Register the hook (idempotent); returns ``self``."""
        if self._stack is None:
            stack = ExitStack()
            stack.enter_context(replace_layer(self.finetuned, self.layer, self.mapper.transform))
            self._stack = stack
        return self

    def off(self) -> SafetySwitch:
        """Remove the hook (idempotent); returns ``self``."""
        if self._stack is not None:
            self._stack.close()
            self._stack = None
        return self

    def __enter__(self) -> SafetySwitch:
        self._entered.append(self.is_on)
        return self.on()

    def __exit__(self, *exc: object) -> None:
        # a block leaves the switch as it found it: nested blocks keep it on until the outer one ends
        if not self._entered.pop():
            self.off()
