"""JSON text exactly as JavaScript's ``JSON.stringify`` writes it (compact).

Output built from non-string content must read the same in this engine and in the
TypeScript reference: ``{"a":1}``, ``1`` for ``1.0``, ``1e+21``, ``null`` for NaN.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from decimal import Decimal
from typing import Any

__all__ = ["js_number", "js_stringify"]


def js_number(value: float) -> str:
    """A number as JavaScript's ``Number.prototype.toString`` spells it."""
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    if not math.isfinite(value):
        return "null"  # what JSON.stringify writes for NaN and ±Infinity
    if value == 0:
        return "0"
    sign = "-" if value < 0 else ""
    _, digits_tuple, exponent = Decimal(repr(abs(value))).normalize().as_tuple()
    digits = "".join(map(str, digits_tuple))
    k = len(digits)
    n = k + int(exponent)  # value = 0.digits × 10^n
    if k <= n <= 21:
        text = digits + "0" * (n - k)
    elif 0 < n <= 21:
        text = f"{digits[:n]}.{digits[n:]}"
    elif -6 < n <= 0:
        text = "0." + "0" * -n + digits
    else:
        mantissa = digits if k == 1 else f"{digits[0]}.{digits[1:]}"
        text = f"{mantissa}e{'+' if n >= 1 else '-'}{abs(n - 1)}"
    return sign + text


def js_stringify(value: Any) -> str:
    """``JSON.stringify(value)``: compact, keys in insertion order, non-ASCII kept."""
    if value is None or value is True or value is False:
        return json.dumps(value)
    if isinstance(value, (int, float)):
        return js_number(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, Mapping):
        items = (f"{js_stringify(_key(k))}:{js_stringify(v)}" for k, v in value.items())
        return "{" + ",".join(items) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(map(js_stringify, value)) + "]"
    return json.dumps(str(value), ensure_ascii=False)  # a Python object: its text


def _key(key: Any) -> str:
    if isinstance(key, str):
        return key
    return js_stringify(key) if key is None or isinstance(key, (bool, int, float)) else str(key)
