"""Model providers: cassette replay (offline), and real APIs as optional extras."""

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
