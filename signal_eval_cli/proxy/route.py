"""How a harness reaches the proxy: per-case base URLs, environment, SDK clients.

``ctx.proxy`` is a :class:`CaseRoute`. In-process harnesses use its base URLs or
``ctx.openai()`` / ``ctx.anthropic()``; subprocesses get :attr:`CaseRoute.env`. The
path prefix ``/c/<case-id>/<run>`` tells the proxy whose call a request is, however
many cases run at once.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

__all__ = ["PLACEHOLDER_KEY", "CaseRoute", "client_env", "sdk_client"]

PLACEHOLDER_KEY = "signal-eval-proxy"
"""Handed to clients when the environment has no key (replay needs none); the proxy
puts the real key from its own environment in its place when it calls upstream."""


_UNRESERVED = re.compile(r"[A-Za-z0-9_.~-]+").fullmatch
"""What ``quote`` leaves as it is: most case ids (``quote`` itself costs as much as the
rest of a case's route)."""


def client_env(openai_url: str, anthropic_url: str, environ: Mapping[str, str]) -> dict[str, str]:
    """The variables that point the OpenAI and Anthropic SDKs (and curl scripts) here."""
    return {
        "OPENAI_BASE_URL": openai_url,
        "ANTHROPIC_BASE_URL": anthropic_url,
        "OPENAI_API_KEY": environ.get("OPENAI_API_KEY") or PLACEHOLDER_KEY,
        "ANTHROPIC_API_KEY": environ.get("ANTHROPIC_API_KEY") or PLACEHOLDER_KEY,
    }


def _settle_httpx() -> None:
    """Import httpx, where installed, before any SDK client is made.

    openai 3 runs on httpx2 but reads the legacy ``httpx`` from ``sys.modules`` whenever
    it is there (to accept its clients and timeouts), on every client and response. While
    another thread imports httpx (a case's first ``ctx.anthropic()``: anthropic < 1 runs
    on it), that module is half made, and the openai client a case beside it makes or
    uses fails: "partially initialized module 'httpx' has no attribute 'Timeout'". An
    import of a module another thread is importing waits for it to finish."""
    with contextlib.suppress(ImportError):
        importlib.import_module("httpx")


def sdk_client(sdk: str, class_name: str, base_url: str | None, key_env: str, **kwargs: Any) -> Any:
    """An SDK client pointed at ``base_url`` (``None``: the SDK's own default); the SDK
    is imported only when asked for."""
    _settle_httpx()
    try:
        module = importlib.import_module(sdk)
    except ImportError:
        raise RuntimeError(
            f"ctx.{sdk}() needs the {sdk} SDK: pip install 'signal-eval[{sdk}]'"
        ) from None
    if base_url is not None:
        kwargs.setdefault("base_url", base_url)
        kwargs.setdefault("api_key", os.environ.get(key_env) or PLACEHOLDER_KEY)
        if "http_client" not in kwargs:
            # plain HTTP on loopback: no certificate store to load (the SDKs' default
            # client spends ~100 ms on that, per client, per case)
            http = (
                "DefaultAsyncHttpxClient"
                if class_name.startswith("Async")
                else "DefaultHttpxClient"
            )
            kwargs["http_client"] = getattr(module, http)(verify=False)
    return getattr(module, class_name)(**kwargs)


@dataclass(frozen=True, slots=True)
class CaseRoute:
    """The proxy address of one case's run."""

    url: str
    """The proxy's root, ``http://127.0.0.1:<port>``."""
    case_id: str
    run: int = 0
    prefix: str = field(init=False, repr=False, compare=False)
    """``<url>/c/<case id, quoted>/<run>``: made once (read for every call a case makes)."""

    def __post_init__(self) -> None:
        case = self.case_id if _UNRESERVED(self.case_id) else quote(self.case_id, safe="")
        object.__setattr__(self, "prefix", f"{self.url}/c/{case}/{self.run}")

    @property
    def openai_base_url(self) -> str:
        return f"{self.prefix}/v1"

    @property
    def anthropic_base_url(self) -> str:
        return self.prefix

    @property
    def env(self) -> dict[str, str]:
        """Environment for a subprocess of this case: ``{**os.environ, **ctx.proxy.env}``."""
        return client_env(self.openai_base_url, self.anthropic_base_url, os.environ)

    def openai(self, *, async_: bool = False, **kwargs: Any) -> Any:
        """An ``openai.OpenAI`` (or ``AsyncOpenAI``) client whose calls go through the proxy."""
        name = "AsyncOpenAI" if async_ else "OpenAI"
        return sdk_client("openai", name, self.openai_base_url, "OPENAI_API_KEY", **kwargs)

    def anthropic(self, *, async_: bool = False, **kwargs: Any) -> Any:
        """An ``anthropic.Anthropic`` (or ``AsyncAnthropic``) client through the proxy."""
        name = "AsyncAnthropic" if async_ else "Anthropic"
        return sdk_client("anthropic", name, self.anthropic_base_url, "ANTHROPIC_API_KEY", **kwargs)
