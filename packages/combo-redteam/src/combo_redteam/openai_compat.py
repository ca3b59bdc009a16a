"""A chat model behind an OpenAI-compatible ``/chat/completions`` endpoint (hosted or local servers).

Uses only the standard library (``urllib``). Retries on 429 and 5xx answers and dropped connections with exponential backoff
(honouring ``Retry-After``), raises :class:`ModelTimeoutError` when a request runs past ``timeout_s``
and :class:`ModelError` for other failures. Refusals are read by a :class:`RefusalDetector`.
"""

from __future__ import annotations

import http.client
import json
import os
import socket
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from combo_redteam.models import Completion, ModelError, ModelTimeoutError, RefusalDetector, Usage, check_messages

__all__ = ["OpenAICompatibleModel", "RETRY_STATUS"]

RETRY_STATUS = (429, 500, 502, 503, 504)
"""HTTP statuses that are retried."""


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
        First retry delay; doubles each retry (``Retry-After`` wins when the server sends it).
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
                 refusal_detector: RefusalDetector | None = None, name: str | None = None,
                 sleep: Callable[[float], None] | None = None) -> None:
        if not isinstance(model, str) or not model:
            raise ValueError(f"model must be a non-empty str, got {model!r}")
        if not isinstance(base_url, str) or not base_url.startswith(("http://", "https://")):
            raise ValueError(f"base_url must start with http:// or https://, got {base_url!r}")
        if not timeout_s > 0:
            raise ValueError(f"timeout_s must be > 0, got {timeout_s!r}")
        if isinstance(max_retries, bool) or not isinstance(max_retries, int) or max_retries < 0:
            raise ValueError(f"max_retries must be an int >= 0, got {max_retries!r}")
        self.model, self.base_url, self.api_key_env = model, base_url.rstrip("/"), api_key_env
        self.timeout_s, self.max_retries, self.backoff_s = float(timeout_s), max_retries, float(backoff_s)
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
        data = json.dumps(self.request_body(messages, max_tokens=max_tokens, temperature=temperature,
                                            seed=seed)).encode()
        url = f"{self.base_url}/chat/completions"
        start = time.perf_counter()
        for attempt in range(self.max_retries + 1):
            request = urllib.request.Request(url, data=data, headers=self._headers(), method="POST")
            try:
                with urllib.request.urlopen(request, timeout=self.timeout_s) as response:  # noqa: S310 - http(s) only
                    payload = json.loads(response.read().decode())
                break
            except urllib.error.HTTPError as exc:
                if exc.code not in RETRY_STATUS or attempt == self.max_retries:
                    detail = exc.read().decode(errors="replace")[:200]
                    raise ModelError(f"{self.name}: HTTP {exc.code} after {attempt + 1} attempt(s): {detail}") from None
                retry_after = exc.headers.get("Retry-After") if exc.headers else None
                delay = float(retry_after) if retry_after and retry_after.replace(".", "", 1).isdigit() else (
                    self.backoff_s * 2**attempt)
                self._sleep(min(delay, 60.0))
            except TimeoutError as exc:
                raise ModelTimeoutError(f"{self.name}: no answer within timeout_s={self.timeout_s}") from exc
            except urllib.error.URLError as exc:
                if isinstance(exc.reason, (TimeoutError, socket.timeout)):
                    raise ModelTimeoutError(f"{self.name}: no answer within timeout_s={self.timeout_s}") from exc
                if attempt == self.max_retries:
                    raise ModelError(f"{self.name}: {exc.reason}") from None
                self._sleep(self.backoff_s * 2**attempt)
            except json.JSONDecodeError:
                raise ModelError(f"{self.name}: the reply is not JSON") from None
            except (ConnectionError, http.client.HTTPException) as exc:  # e.g. the server dropped the connection
                if attempt == self.max_retries:
                    raise ModelError(f"{self.name}: {type(exc).__name__}: {exc}") from None
                self._sleep(self.backoff_s * 2**attempt)
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
