"""Hosted chat APIs: rate limiting, retries with backoff, an Anthropic-style messages client, a litellm adapter.

``post_json`` is the one HTTP path of the hosted clients (standard library only): it waits for the
client's :class:`RateLimiter`, retries 429/5xx answers and dropped connections with exponential
backoff (``Retry-After`` wins when the server sends it), and raises :class:`ModelTimeoutError` or
:class:`ModelError`. :class:`AnthropicMessagesModel` speaks the ``/v1/messages`` format
(``x-api-key`` header, top-level ``system``, ``content`` blocks, ``input_tokens``/``output_tokens``).
:class:`LiteLLMModel` hands the chat to ``litellm.completion`` (the ``litellm`` extra), which reaches
the providers litellm supports.
"""

from __future__ import annotations

import http.client
import json
import os
import socket
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from icml25_shared.validation import Interval, check_params

from combo_redteam.models import Completion, ModelError, ModelTimeoutError, RefusalDetector, Usage, check_messages

__all__ = ["AnthropicMessagesModel", "LiteLLMModel", "RETRY_STATUS", "RateLimiter", "post_json"]

RETRY_STATUS = (429, 500, 502, 503, 504, 529)
"""HTTP statuses that are retried (529: overloaded, as Anthropic's API answers)."""

MAX_BACKOFF_S = 60.0
"""Longest wait between two attempts."""


class RateLimiter:
    """At most ``requests_per_minute`` requests, spaced evenly, shared by every thread that uses it.

    Parameters
    ----------
    requests_per_minute : float
        The limit (> 0).
    clock, sleep : callable, optional
        ``time.monotonic`` and ``time.sleep`` (replaceable in tests).

    Examples
    --------
    >>> waited = []
    >>> limiter = RateLimiter(60, clock=lambda: 0.0, sleep=waited.append)
    >>> for _ in range(3):
    ...     limiter.wait()
    >>> waited
    [1.0, 2.0]
    """

    def __init__(self, requests_per_minute: float, *, clock: Callable[[], float] | None = None,
                 sleep: Callable[[float], None] | None = None) -> None:
        check_params({"requests_per_minute": requests_per_minute},
                     {"requests_per_minute": [Interval(float, 0, None, closed="neither"),
                                              Interval(int, 1, None)]}, owner="RateLimiter")
        self.interval_s = 60.0 / float(requests_per_minute)
        self._clock, self._sleep = clock or time.monotonic, sleep or time.sleep
        self._next = -float("inf")
        self._lock = threading.Lock()

    def wait(self) -> None:
        """Block until the next request may start."""
        with self._lock:
            now = self._clock()
            start = max(now, self._next)
            self._next = start + self.interval_s
        if start > now:
            self._sleep(start - now)


def post_json(url: str, body: Mapping[str, Any], headers: Mapping[str, str], *, name: str, timeout_s: float,
              max_retries: int, backoff_s: float, sleep: Callable[[float], None],
              limiter: RateLimiter | None = None) -> dict[str, Any]:
    """POST ``body`` as JSON and return the decoded reply, with rate limiting and retries.

    Raises
    ------
    ModelTimeoutError
        When a request runs past ``timeout_s``.
    ModelError
        After ``max_retries`` retries, on a non-retried HTTP status, or when the reply is not JSON.
    """
    data = json.dumps(body).encode()
    for attempt in range(max_retries + 1):
        if limiter is not None:
            limiter.wait()
        request = urllib.request.Request(url, data=data, headers=dict(headers), method="POST")
        delay = min(backoff_s * 2**attempt, MAX_BACKOFF_S)
        try:
            with urllib.request.urlopen(request, timeout=timeout_s) as response:  # noqa: S310 - http(s) only
                payload = json.loads(response.read().decode())
            if not isinstance(payload, dict):
                raise ModelError(f"{name}: the reply is not a JSON object")
            return payload
        except urllib.error.HTTPError as exc:
            if exc.code not in RETRY_STATUS or attempt == max_retries:
                detail = exc.read().decode(errors="replace")[:200]
                raise ModelError(f"{name}: HTTP {exc.code} after {attempt + 1} attempt(s): {detail}") from None
            retry_after = exc.headers.get("Retry-After") if exc.headers else None
            if retry_after and retry_after.replace(".", "", 1).isdigit():
                delay = min(float(retry_after), MAX_BACKOFF_S)
        except TimeoutError as exc:
            raise ModelTimeoutError(f"{name}: no answer within timeout_s={timeout_s}") from exc
        except urllib.error.URLError as exc:
            if isinstance(exc.reason, (TimeoutError, socket.timeout)):
                raise ModelTimeoutError(f"{name}: no answer within timeout_s={timeout_s}") from exc
            if attempt == max_retries:
                raise ModelError(f"{name}: {exc.reason}") from None
        except json.JSONDecodeError:
            raise ModelError(f"{name}: the reply is not JSON") from None
        except (ConnectionError, http.client.HTTPException) as exc:  # e.g. the server dropped the connection
            if attempt == max_retries:
                raise ModelError(f"{name}: {type(exc).__name__}: {exc}") from None
        sleep(delay)
    raise ModelError(f"{name}: no reply")  # pragma: no cover - the loop returns or raises


def check_client(owner: str, *, model: Any, base_url: Any, timeout_s: Any, max_retries: Any, backoff_s: Any,
                 requests_per_minute: Any) -> None:
    """Validate the common configuration of the HTTP clients."""
    check_params({"model": model, "base_url": base_url, "timeout_s": timeout_s, "max_retries": max_retries,
                  "backoff_s": backoff_s, "requests_per_minute": requests_per_minute},
                 {"model": [str], "base_url": [str], "timeout_s": [Interval(float, 0, None, closed="neither"),
                                                                  Interval(int, 1, None)],
                  "max_retries": [Interval(int, 0, None)],
                  "backoff_s": [Interval(float, 0, None), Interval(int, 0, None)],
                  "requests_per_minute": [None, Interval(float, 0, None, closed="neither"), Interval(int, 1, None)]},
                 owner=owner)
    if not model:
        raise ValueError(f"{owner}: model must be a non-empty str; got ''")
    if not base_url.startswith(("http://", "https://")):
        raise ValueError(f"{owner}: base_url must start with http:// or https://; got {base_url!r}")


class AnthropicMessagesModel:
    """Chat model behind an Anthropic-style ``<base_url>/messages`` endpoint.

    Parameters
    ----------
    model : str
        The model id (sent as ``model``).
    base_url : str, default "https://api.anthropic.com/v1"
        The API root.
    api_key_env : str or None, default "ANTHROPIC_API_KEY"
        Environment variable holding the key (sent as ``x-api-key``); None sends none.
    anthropic_version : str, default "2023-06-01"
        Sent as the ``anthropic-version`` header.
    timeout_s, max_retries, backoff_s : float, int, float
        Per-request timeout, retries after 429/5xx/529 or a dropped connection, first retry delay (doubling).
    requests_per_minute : float, optional
        Client-side rate limit shared by every thread using this model.
    refusal_detector : RefusalDetector, optional
        Decides ``refused`` besides ``stop_reason == "refusal"``.
    name : str, optional
        Name in logs and cache keys (default ``anthropic:<model>@<base_url>`` plus the detector's tag).
    sleep : callable, optional
        The sleep between retries (``time.sleep``).

    Notes
    -----
    ``seed`` is not part of this API and is not sent; ``system`` messages are joined into the
    top-level ``system`` field.

    Examples
    --------
    >>> m = AnthropicMessagesModel("claude-x", base_url="http://127.0.0.1:9/v1", api_key_env=None)
    >>> m.request_body([{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}],
    ...                max_tokens=8)["system"]
    'Be brief.'
    """

    def __init__(self, model: str, *, base_url: str = "https://api.anthropic.com/v1",
                 api_key_env: str | None = "ANTHROPIC_API_KEY", anthropic_version: str = "2023-06-01",
                 timeout_s: float = 60.0, max_retries: int = 3, backoff_s: float = 1.0,
                 requests_per_minute: float | None = None, refusal_detector: RefusalDetector | None = None,
                 name: str | None = None, sleep: Callable[[float], None] | None = None) -> None:
        check_client("AnthropicMessagesModel", model=model, base_url=base_url, timeout_s=timeout_s,
                     max_retries=max_retries, backoff_s=backoff_s, requests_per_minute=requests_per_minute)
        self.model, self.base_url, self.api_key_env = model, base_url.rstrip("/"), api_key_env
        self.anthropic_version = anthropic_version
        self.timeout_s, self.max_retries, self.backoff_s = float(timeout_s), max_retries, float(backoff_s)
        self.limiter = None if requests_per_minute is None else RateLimiter(requests_per_minute)
        self.refusal_detector = refusal_detector or RefusalDetector()
        self.name = name or f"anthropic:{model}@{self.base_url}{self.refusal_detector.tag}"
        self._sleep = sleep or time.sleep

    def request_body(self, messages: Sequence[Mapping[str, str]], *, max_tokens: int = 1024,
                     temperature: float = 0.0) -> dict[str, Any]:
        """The JSON body sent for a chat (system messages moved to ``system``)."""
        chat = check_messages(messages)
        system = "\n\n".join(m["content"] for m in chat if m["role"] == "system")
        body: dict[str, Any] = {"model": self.model, "max_tokens": int(max_tokens), "temperature": float(temperature),
                                "messages": [m for m in chat if m["role"] != "system"]}
        if system:
            body["system"] = system
        return body

    def complete(self, messages: Sequence[Mapping[str, str]], *, max_tokens: int = 1024, temperature: float = 0.0,
                 seed: int | None = None) -> Completion:
        """POST the chat and return the text blocks of the reply (``seed`` is not sent)."""
        headers = {"Content-Type": "application/json", "anthropic-version": self.anthropic_version}
        if self.api_key_env is not None:
            key = os.environ.get(self.api_key_env)
            if not key:
                raise ModelError(f"environment variable {self.api_key_env!r} (api_key_env) is not set")
            headers["x-api-key"] = key
        start = time.perf_counter()
        payload = post_json(f"{self.base_url}/messages", self.request_body(messages, max_tokens=max_tokens,
                                                                            temperature=temperature),
                            headers, name=self.name, timeout_s=self.timeout_s, max_retries=self.max_retries,
                            backoff_s=self.backoff_s, sleep=self._sleep, limiter=self.limiter)
        blocks = payload.get("content")
        if not isinstance(blocks, list):
            raise ModelError(f"{self.name}: the reply has no content list")
        text = "".join(b.get("text", "") for b in blocks if isinstance(b, dict) and b.get("type") == "text")
        usage = payload.get("usage") or {}
        refused = payload.get("stop_reason") == "refusal" or self.refusal_detector(text)
        return Completion(text, refused, Usage(int(usage.get("input_tokens", 0)), int(usage.get("output_tokens", 0))),
                          time.perf_counter() - start)


class LiteLLMModel:
    """Any provider litellm reaches, through ``litellm.completion`` (extra ``litellm``).

    Parameters
    ----------
    model : str
        A litellm model string (``"anthropic/claude-..."``, ``"openai/gpt-..."``, ``"ollama/llama3"``...).
    refusal_detector : RefusalDetector, optional
        Decides ``refused`` besides ``finish_reason == "content_filter"``.
    name : str, optional
        Name in logs and cache keys (default ``litellm:<model>`` plus the detector's tag).
    **kwargs
        Passed to every ``litellm.completion`` call (``api_base``, ``num_retries``, ``timeout``...).
    """

    def __init__(self, model: str, *, refusal_detector: RefusalDetector | None = None, name: str | None = None,
                 **kwargs: Any) -> None:
        check_params({"model": model}, {"model": [str]}, owner="LiteLLMModel")
        if not model:
            raise ValueError("LiteLLMModel: model must be a non-empty str; got ''")
        self.model, self.kwargs = model, dict(kwargs)
        self.refusal_detector = refusal_detector or RefusalDetector()
        self.name = name or f"litellm:{model}{self.refusal_detector.tag}"

    def complete(self, messages: Sequence[Mapping[str, str]], *, max_tokens: int = 1024, temperature: float = 0.0,
                 seed: int | None = None) -> Completion:
        """Call ``litellm.completion``; its exceptions become :class:`ModelError`."""
        try:
            import litellm
        except ImportError as exc:
            raise ImportError("LiteLLMModel needs litellm: pip install 'combo-redteam[litellm]'") from exc
        extra = {"seed": int(seed)} if seed is not None else {}
        start = time.perf_counter()
        try:
            response = litellm.completion(model=self.model, messages=check_messages(messages), max_tokens=int(max_tokens),
                                          temperature=float(temperature), **extra, **self.kwargs)
        except Exception as exc:  # noqa: BLE001 - every provider error is a failed call of this model
            raise ModelError(f"{self.name}: {type(exc).__name__}: {exc}") from exc
        try:
            choice = response.choices[0]
            text = choice.message.content or ""
        except (AttributeError, IndexError, TypeError):
            raise ModelError(f"{self.name}: the reply has no choices[0].message") from None
        usage = getattr(response, "usage", None)
        refused = getattr(choice, "finish_reason", None) == "content_filter" or self.refusal_detector(text)
        return Completion(text, refused, Usage(int(getattr(usage, "prompt_tokens", 0) or 0),
                                               int(getattr(usage, "completion_tokens", 0) or 0)),
                          time.perf_counter() - start)
