"""When and how long to wait before trying a model call again: one policy for the
providers (:class:`~signal_eval_cli.providers.reliability.ReliableProvider`) and the model
proxy (:mod:`signal_eval_cli.proxy.server`), which neither may import from the other.

- :class:`RetryPolicy`: exponential backoff with jitter; a server's ``Retry-After`` wins
  when it asks for longer (and one longer than ``max_retry_after`` is not waited for).
- :func:`parse_retry_after`: that ``Retry-After``, from a response's headers.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["RetryPolicy", "parse_retry_after"]


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """How often and how long to wait: ``base_delay * 2**attempt``, capped, with jitter.

    The jitter keeps between ``1 - jitter`` and 1 of the backoff ("equal jitter"), so
    clients that failed together do not retry together. ``max_retries=0`` disables
    retries; the SDKs' own retries are always off so this is the only policy.
    """

    max_retries: int = 4
    base_delay: float = 0.5
    max_delay: float = 20.0
    jitter: float = 0.5
    max_retry_after: float = 60.0

    def __post_init__(self) -> None:
        if self.max_retries < 0 or self.base_delay < 0 or self.max_delay < 0:
            raise ValueError("retry settings must not be negative")
        if not 0 <= self.jitter <= 1:
            raise ValueError("jitter must be between 0 and 1")

    def backoff(self, attempt: int, rng: Callable[[], float] = random.random) -> float:
        """Seconds to wait before retry number ``attempt + 1`` (``attempt`` counts from 0)."""
        ceiling = min(self.max_delay, self.base_delay * float(2**attempt))
        return ceiling * (1 - self.jitter * rng())

    def delay(
        self, attempt: int, retry_after: float | None, rng: Callable[[], float] = random.random
    ) -> float:
        """The backoff, or ``Retry-After`` when the server asked for longer."""
        wait = self.backoff(attempt, rng)
        return max(wait, retry_after) if retry_after is not None else wait


def parse_retry_after(headers: Mapping[str, str] | Any) -> float | None:
    """Seconds from ``retry-after-ms`` or ``retry-after`` (seconds or an HTTP date)."""
    if headers is None:
        return None
    try:
        ms = headers.get("retry-after-ms")
        if ms is not None:
            return max(0.0, float(ms) / 1000)
        value = headers.get("retry-after")
    except (TypeError, ValueError, AttributeError):
        return None
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    import email.utils  # here: an HTTP date is rare, and the module costs every start 3 ms

    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())
