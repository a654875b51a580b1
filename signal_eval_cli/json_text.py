"""Compact JSON text from an encoder made once, for what is encoded per model call or case.

``json.JSONEncoder.encode`` sets its C encoder up anew at every call, with a table of
the objects it is inside so that a cycle is a ``ValueError``: on a model request or
answer (tens of values) that set-up and table cost a third of the encoding, and the
proxy encodes two or three per call; on a case's journal line, an eighth. So the encoder
is made once, without the table; the text is the same as ``json.dumps``'s with the same
settings, and a cycle (a YAML alias, a harness's payload that holds itself) ends in
``RecursionError`` instead, which a caller that may meet one catches.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

__all__ = ["compact_encoder"]


def compact_encoder(
    *, sort_keys: bool = False, default: Callable[[Any], Any] | None = None
) -> Callable[[Any], str]:
    """``json.dumps(value, ensure_ascii=False, separators=(",", ":"), sort_keys=...,
    default=...)``."""
    try:
        from _json import make_encoder
    except ImportError:  # a Python without the C accelerator
        return json.JSONEncoder(
            ensure_ascii=False, separators=(",", ":"), sort_keys=sort_keys, default=default
        ).encode
    encode = make_encoder(
        None,  # no cycle check (see the module doc)
        default or json.JSONEncoder().default,  # by default json.dumps's TypeError
        json.encoder.encode_basestring,
        None,
        ":",
        ",",
        sort_keys,
        False,
        True,
    )
    join = "".join
    return lambda value: join(encode(value, 0))
