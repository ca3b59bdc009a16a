"""A local Hugging Face causal language model as a :class:`ChatModel` (extra ``transformers``).

``TransformersChatModel(path)`` loads the tokenizer and model from a folder with
``local_files_only=True``; nothing is downloaded. Chats are rendered with the tokenizer's chat
template when it has one (tokenized without adding special tokens again: the template writes its own BOS),
otherwise as ``role: content`` lines followed by ``assistant:``. Greedy decoding uses ``generate``;
sampling draws from a ``torch.Generator`` of the call, never from the caller's global RNG.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from combo_redteam.models import Completion, RefusalDetector, Usage, check_messages

__all__ = ["TransformersChatModel"]


def _import() -> tuple[Any, Any]:
    try:
        import torch
        import transformers
    except ImportError as exc:  # pragma: no cover - exercised without the extra
        raise ImportError("TransformersChatModel needs torch and transformers: "
                          "pip install 'combo-redteam[transformers]'") from exc
    return torch, transformers


class TransformersChatModel:
    """Chat with a local causal LM through ``transformers``.

    Parameters
    ----------
    path : str or Path
        Folder written by ``save_pretrained`` (model and tokenizer).
    local_files_only : bool, default True
        Passed to ``from_pretrained``; keep True to never reach a model hub.
    device : str, default "cpu"
        Torch device.
    refusal_detector : RefusalDetector, optional
        Decides ``Completion.refused`` (default patterns).
    name : str, optional
        Name in logs and cache keys (default ``transformers:<absolute folder path>``, so two models saved
        under the same folder name never share cache entries, followed by the detector's
        :attr:`RefusalDetector.tag` when it is not the default: the cache stores the refusal decision).
    """

    def __init__(self, path: str | Path, *, local_files_only: bool = True, device: str = "cpu",
                 refusal_detector: RefusalDetector | None = None, name: str | None = None) -> None:
        path = Path(path)
        if not path.is_dir():
            raise FileNotFoundError(f"no model folder at {path} (TransformersChatModel loads local folders only)")
        torch, transformers = _import()
        self.path, self.device = path, device
        self.tokenizer = transformers.AutoTokenizer.from_pretrained(path, local_files_only=local_files_only)
        self.model = transformers.AutoModelForCausalLM.from_pretrained(path, local_files_only=local_files_only)
        self.model.to(device).eval()
        self.refusal_detector = refusal_detector or RefusalDetector()
        self.name = name or f"transformers:{path.resolve()}{self.refusal_detector.tag}"
        self._torch = torch
        self._lock = threading.Lock()

    def _render(self, chat: list[dict[str, str]]) -> str:
        if getattr(self.tokenizer, "chat_template", None):
            return str(self.tokenizer.apply_chat_template(chat, tokenize=False, add_generation_prompt=True))
        return "".join(f"{m['role']}: {m['content']}\n" for m in chat) + "assistant:"

    def complete(self, messages: Sequence[Mapping[str, str]], *, max_tokens: int = 1024, temperature: float = 0.0,
                 seed: int | None = None) -> Completion:
        """Generate up to ``max_tokens`` new tokens (greedy at temperature 0, else seeded sampling).

        Parameters
        ----------
        messages : sequence of mapping
            ``{"role", "content"}`` messages.
        max_tokens : int, default 1024
            New tokens at most.
        temperature : float, default 0.0
            0 decodes greedily.
        seed : int, optional
            Seeds this call's own sampling generator (the global torch RNG is left alone).

        Returns
        -------
        Completion
            The decoded new tokens, refusal by the detector, token counts.
        """
        import time

        chat = check_messages(messages)
        start = time.perf_counter()
        ids = self.encode(chat).to(self.device)
        pad = self.tokenizer.pad_token_id if self.tokenizer.pad_token_id is not None else self.tokenizer.eos_token_id
        with self._lock, self._torch.no_grad():  # generation state is not thread safe
            if temperature > 0:
                new = self._sample(ids, int(max_tokens), float(temperature), seed)
            else:
                out = self.model.generate(input_ids=ids, attention_mask=self._torch.ones_like(ids),
                                          max_new_tokens=int(max_tokens), do_sample=False, pad_token_id=pad)
                new = out[0, ids.shape[1]:]
        text = self.tokenizer.decode(new, skip_special_tokens=True)
        return Completion(text, self.refusal_detector(text), Usage(int(ids.shape[1]), int(new.numel())),
                          time.perf_counter() - start)

    def encode(self, messages: Sequence[Mapping[str, str]]) -> Any:
        """The prompt's token ids, shape (1, length).

        A chat template renders its own special tokens (``bos_token`` in Llama, Gemma and Mistral
        templates), so the rendered text is tokenized without adding them again: one BOS, not two.
        Without a template the tokenizer adds its special tokens as for any text.
        """
        chat = check_messages(messages)
        templated = bool(getattr(self.tokenizer, "chat_template", None))
        encoded = self.tokenizer(self._render(chat), return_tensors="pt", add_special_tokens=not templated)
        return encoded["input_ids"]

    def _sample(self, ids: Any, max_tokens: int, temperature: float, seed: int | None) -> Any:
        """Temperature sampling with a generator of our own: the caller's global torch RNG is never touched."""
        torch = self._torch
        generator = torch.Generator(device=ids.device)
        if seed is None:
            generator.seed()
        else:
            generator.manual_seed(int(seed))
        import inspect

        eos = self.tokenizer.eos_token_id
        # transformers 5 names the key/value cache `cache`; 4.x names it `past_key_values`
        key = "cache" if "cache" in inspect.signature(self.model.forward).parameters else "past_key_values"
        past, step_ids, out = None, ids, []
        for _ in range(max_tokens):
            result = self.model(input_ids=step_ids, use_cache=True, **{key: past})
            past = result[key]
            probs = torch.softmax(result.logits[:, -1, :].float() / temperature, dim=-1)
            token = torch.multinomial(probs, 1, generator=generator)
            out.append(token)
            if eos is not None and int(token) == int(eos):
                break
            step_ids = token
        return torch.cat(out, dim=1)[0] if out else ids.new_zeros(0)
