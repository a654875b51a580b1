"""OpenLLMetry's (Traceloop's) LangChain instrumentation, as the GenAI attributes we read.

``opentelemetry-instrumentation-langchain`` marks its spans ``traceloop.span.kind``. A tool
run (``execute_tool``) keeps in ``gen_ai.tool.call.arguments`` the LangChain callback's own
arguments, ``{"input_str": <repr>, "inputs": {...}, "kwargs": {"tool_call_id"}, "tags",
"metadata"}``, and in ``gen_ai.tool.call.result`` ``{"output": <ToolMessage>, "kwargs"}``:
:func:`operation` reads the tool's arguments, call id and the text its message holds. A
LangGraph node's run is an ``execute_task`` span whose ``gen_ai.task.name`` is the node
its ``traceloop.association.properties.langgraph_node`` names: an agent run, as every
importer reads a node run.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from signal_eval_cli.traces.mapping import parse_arguments
from signal_eval_cli.traces.openinference import tool_output

__all__ = ["node_run", "operation"]

NODE_KEY = "traceloop.association.properties.langgraph_node"


def operation(attributes: dict[str, Any], operation: Any) -> Any:
    """The GenAI operation of a Traceloop span (``attributes`` get the keys we read)."""
    if operation == "execute_tool":
        call = parse_arguments(attributes.get("gen_ai.tool.call.arguments"))
        if isinstance(call, Mapping) and "input_str" in call:
            arguments = call.get("inputs")
            attributes["gen_ai.tool.call.arguments"] = (
                arguments if isinstance(arguments, Mapping) else call.get("input_str")
            )
            call_id = _field(call.get("kwargs"), "tool_call_id")
            if call_id is not None:
                attributes.setdefault("gen_ai.tool.call.id", call_id)
        result = parse_arguments(attributes.get("gen_ai.tool.call.result"))
        if isinstance(result, Mapping) and "output" in result:
            attributes["gen_ai.tool.call.result"] = tool_output(result["output"])
        return operation
    node = attributes.get(NODE_KEY)
    if operation == "execute_task" and isinstance(node, str) and not node.startswith("__"):
        is_node = attributes.get("gen_ai.task.name") == node  # not a runnable inside it
        if is_node:
            attributes.setdefault("agent.name", node)
            return "invoke_agent"
    return operation


def _field(value: Any, key: str) -> Any:
    return value.get(key) if isinstance(value, Mapping) else None


def node_run(attributes: Mapping[str, Any], operation: Any) -> str | None:
    """The LangGraph node a span read by :func:`operation` is the run of, if it is one."""
    node = attributes.get(NODE_KEY)
    return node if operation == "invoke_agent" and attributes.get("agent.name") == node else None
