"""Model providers: cassette replay (offline), and the OpenAI and Anthropic APIs over HTTP."""

from signal_eval_cli.providers.base import (
    Provider,
    ProviderError,
    ProviderRequest,
    ProviderResponse,
    ToolCallRecord,
    call_provider,
)

__all__ = [
    "Provider",
    "ProviderError",
    "ProviderRequest",
    "ProviderResponse",
    "ToolCallRecord",
    "call_provider",
]
