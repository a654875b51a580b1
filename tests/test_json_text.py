"""The encoder made once writes what json.dumps writes with the same settings."""

from __future__ import annotations

import datetime
import json
from typing import Any

import pytest

from signal_eval_cli.json_text import compact_encoder

VALUES: list[Any] = [
    {"b": 1, "a": [1.5, None, True, 'é \u2028 \ud800 "q" \\ \n'], "c": {"y": -0.0, "1": 2}},
    {"n": float("nan"), "i": float("inf"), "big": 10**30, "small": 1e-300},
    {1: "int key", 2.5: "float key", False: "bool key"},
    "a string alone",
    [],
    {},
]


@pytest.mark.parametrize("sort_keys", [False, True])
def test_the_text_is_json_dumps_text(sort_keys: bool) -> None:
    encode = compact_encoder(sort_keys=sort_keys)
    for value in VALUES:
        expected = json.dumps(value, ensure_ascii=False, separators=(",", ":"), sort_keys=sort_keys)
        assert encode(value) == expected
        assert encode(value) == expected  # made once: nothing is left over from a call


def test_what_json_cannot_hold_is_the_same_type_error() -> None:
    value = {"at": datetime.date(2026, 1, 1)}
    with pytest.raises(TypeError, match="Object of type date is not JSON serializable"):
        compact_encoder()(value)
    assert compact_encoder()({"after": "an error"}) == '{"after":"an error"}'


def test_a_default_writes_what_json_cannot_hold_as_json_dumps_does() -> None:
    value = {"at": datetime.date(2026, 1, 1), "n": [1.5, {"set": {3}}]}
    expected = json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=repr)
    assert compact_encoder(default=repr)(value) == expected
    assert expected == '{"at":"datetime.date(2026, 1, 1)","n":[1.5,{"set":"{3}"}]}'


def test_a_value_that_holds_itself_is_a_recursion_error() -> None:
    """Not json.dumps's ValueError: a caller that may meet one (the journal) catches it."""
    looped: dict[str, Any] = {"n": 1}
    looped["self"] = looped
    with pytest.raises(RecursionError):
        compact_encoder()(looped)
