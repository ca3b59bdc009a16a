"""A chat model behind an OpenAI-compatible ``/chat/completions`` endpoint (hosted or local servers).

Uses only the standard library (``urllib``, through :func:`combo_redteam.hosted.post_json`). Retries on 429
and 5xx answers and dropped connections with exponential backoff (honouring ``Retry-After``), waits for an
optional client-side rate limit, raises :class:`ModelTimeoutError` when a request runs past ``timeout_s``
and :class:`ModelError` for other failures. Refusals are read by a :class:`RefusalDetector`.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from combo_redteam.hosted import RETRY_STATUS, RateLimiter, check_client, post_json
from combo_redteam.models import Completion, ModelError, RefusalDetector, Usage, check_messages

__all__ = ["OpenAICompatibleModel", "RETRY_STATUS"]



class OpenAICompatibleModel:
    """Chat model served at ``<base_url>/chat/completions``.

    Parameters
    ----------
    model : str
        The server's model id (sent as ``model``).
    base_url : str
        E.g. ``https://api.openai.com/v1`` or ``http://127.0.0.1:8000/v1``.
    api_key_env : str, optional
        Name of the environment variable holding the key (sent as a bearer token); None sends no key.
    timeout_s : float, default 60.0
        Per-request timeout.
    max_retries : int, default 3
        Retries after a 429/5xx answer or a dropped connection.
    backoff_s : float, default 1.0
        First retry delay; doubles each retry up to 60 s (``Retry-After`` wins when the server sends it).
    requests_per_minute : float, optional
        Client-side rate limit shared by every thread using this model (hosted APIs' quotas).
    refusal_detector : RefusalDetector, optional
        Decides ``Completion.refused`` (default patterns).
    name : str, optional
        Name in logs and cache keys (default ``openai:<model>@<base_url>``, followed by the detector's
        :attr:`RefusalDetector.tag` when it is not the default: the cache stores the refusal decision).
    sleep : callable, optional
        The sleep function used between retries (``time.sleep``).

    Examples
    --------
    >>> m = OpenAICompatibleModel("my-model", base_url="http://127.0.0.1:9/v1", api_key_env=None)
    >>> m.name
    'openai:my-model@http://127.0.0.1:9/v1'
    """

    def __init__(self, model: str, *, base_url: str, api_key_env: str | None = "OPENAI_API_KEY",
                 timeout_s: float = 60.0, max_retries: int = 3, backoff_s: float = 1.0,
                 requests_per_minute: float | None = None, refusal_detector: RefusalDetector | None = None, name: str | None = None,
                 sleep: Callable[[float], None] | None = None) -> None:
        check_client("OpenAICompatibleModel", model=model, base_url=base_url, timeout_s=timeout_s,
                     max_retries=max_retries, backoff_s=backoff_s, requests_per_minute=requests_per_minute)
        self.model, self.base_url, self.api_key_env = model, base_url.rstrip("/"), api_key_env
        self.timeout_s, self.max_retries, self.backoff_s = float(timeout_s), max_retries, float(backoff_s)
        self.limiter = None if requests_per_minute is None else RateLimiter(requests_per_minute)
        self.refusal_detector = refusal_detector or RefusalDetector()
        self.name = name or f"openai:{model}@{self.base_url}{self.refusal_detector.tag}"
        self._sleep = sleep or time.sleep

    def _headers(self) -> dict[str, str]:
        headers = {"Content-Type": "application/json"}
        if self.api_key_env is not None:
            key = os.environ.get(self.api_key_env)
            if not key:
                raise ModelError(f"environment variable {self.api_key_env!r} (api_key_env) is not set")
            headers["Authorization"] = f"Bearer {key}"
        return headers

    def request_body(self, messages: Sequence[Mapping[str, str]], *, max_tokens: int = 1024,
                     temperature: float = 0.0, seed: int | None = None) -> dict[str, Any]:
        """The JSON body sent for a chat."""
        body: dict[str, Any] = {"model": self.model, "messages": check_messages(messages), "max_tokens": int(max_tokens),
                                "temperature": float(temperature)}
        if seed is not None:
            body["seed"] = int(seed)
        return body

    def complete(self, messages: Sequence[Mapping[str, str]], *, max_tokens: int = 1024, temperature: float = 0.0,
                 seed: int | None = None) -> Completion:
        """POST the chat and return the first choice.

        Parameters
        ----------
        messages : sequence of mapping
            ``{"role", "content"}`` messages.
        max_tokens : int, default 1024
            Completion length limit.
        temperature : float, default 0.0
            Sampling temperature.
        seed : int, optional
            Sent as ``seed`` (servers that support it sample reproducibly).

        Returns
        -------
        Completion
            Text, refusal (``finish_reason == "content_filter"``, a ``refusal`` field, or the detector),
            usage and latency.

        Raises
        ------
        ModelTimeoutError
            When a request runs past ``timeout_s``.
        ModelError
            After ``max_retries`` retries, on a non-retried HTTP error or a malformed reply.
        """
        start = time.perf_counter()
        payload = post_json(f"{self.base_url}/chat/completions",
                            self.request_body(messages, max_tokens=max_tokens, temperature=temperature, seed=seed),
                            self._headers(), name=self.name, timeout_s=self.timeout_s, max_retries=self.max_retries,
                            backoff_s=self.backoff_s, sleep=self._sleep, limiter=self.limiter)
        try:
            choice = payload["choices"][0]
            message = choice["message"]
            text = message.get("content") or ""
        except (KeyError, IndexError, TypeError):
            raise ModelError(f"{self.name}: the reply has no choices[0].message") from None
        usage = payload.get("usage") or {}
        refused = bool(message.get("refusal")) or choice.get("finish_reason") == "content_filter" or (
            self.refusal_detector(text))
        return Completion(text or str(message.get("refusal") or ""), refused,
                          Usage(int(usage.get("prompt_tokens", 0)), int(usage.get("completion_tokens", 0))),
                          time.perf_counter() - start)
