"""Per-test outcomes from a JUnit XML report (pytest ``--junitxml``, ``node --test
--test-reporter=junit``, ``go-junit-report``).

A test's id joins, with ``::``, its ``classname`` and the names of the suites around it
and its own name: ``test_greeting::test_strip`` (pytest), ``suite::inner ok``
(node), ``calc::TestAdd`` (go-junit-report). Two placeholders the runners write are left
out: pytest's outer suite ``pytest`` and node's ``classname="test"``; so is a suite named
as the class (go-junit-report names both after the package). Parsing never resolves
entities or fetches anything (``xml.etree`` expands no external entities; a DOCTYPE is
refused outright).
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from dataclasses import dataclass
from typing import Literal

from signal_eval_cli.errors import EvalError

__all__ = ["JunitError", "TestOutcome", "parse_junit"]

Status = Literal["passed", "failed", "skipped"]
_PLACEHOLDER_SUITES = {"pytest"}
_PLACEHOLDER_CLASSES = {"test"}
_MESSAGE_LIMIT = 500


class JunitError(EvalError, ValueError):
    """A report that is not JUnit XML."""


@dataclass(frozen=True, slots=True)
class TestOutcome:
    __test__ = False  # not a pytest test class

    id: str
    status: Status
    message: str = ""

    def to_dict(self) -> dict[str, str]:
        out = {"id": self.id, "status": self.status}
        if self.message:
            out["message"] = self.message
        return out


def _outcome(case: ET.Element, suites: list[str]) -> TestOutcome:
    classname = case.get("classname") or ""
    parts = [] if classname in _PLACEHOLDER_CLASSES else [classname]
    parts += [s for s in suites if s not in _PLACEHOLDER_SUITES and s != classname]
    parts.append(case.get("name") or "?")
    test_id = "::".join(p for p in parts if p)
    for tag, status in (("failure", "failed"), ("error", "failed"), ("skipped", "skipped")):
        child = case.find(tag)
        if child is not None:
            message = (child.get("message") or (child.text or "").strip())[:_MESSAGE_LIMIT]
            return TestOutcome(test_id, status, message)  # type: ignore[arg-type]
    return TestOutcome(test_id, "passed")


def parse_junit(data: bytes) -> list[TestOutcome]:
    """Every ``<testcase>`` in document order."""
    if b"<!DOCTYPE" in data[:4096].upper():
        raise JunitError("a JUnit report with a DOCTYPE is refused (entities)")
    try:
        root = ET.fromstring(data)
    except ET.ParseError as exc:
        raise JunitError(f"not XML: {exc}") from None
    if root.tag not in ("testsuites", "testsuite"):
        raise JunitError(f"not a JUnit report: the root element is <{root.tag}>")
    outcomes: list[TestOutcome] = []

    def walk(element: ET.Element, suites: list[str]) -> None:
        for child in element:
            if child.tag == "testcase":
                outcomes.append(_outcome(child, suites))
            elif child.tag == "testsuite":
                walk(child, [*suites, child.get("name") or ""])

    walk(root, [root.get("name") or ""] if root.tag == "testsuite" else [])
    return outcomes
