"""A coding agent that asks a model what to write, like a CLI coding agent would.

It is configured by the environment alone (``OPENAI_BASE_URL``, ``OPENAI_API_KEY``): one
plain call for the greeting word, one streamed call (with usage) for a note. It calls
through the ``openai`` SDK; with ``--http``, it sends the same two requests in plain HTTP,
for tests whose subject is not the SDK: importing it costs 1.5-2 s of CPU per run.
Usage: model_agent.py [TASK] [--http]; it works in its cwd (the workspace).
"""

from __future__ import annotations

import json
import os
import sys
import urllib.request
from pathlib import Path
from typing import Any

MODEL = "gpt-4o-mini"


def sdk_asker() -> Any:
    """``ask(messages, stream)``: the answer's text, through the SDK."""
    import openai

    client = openai.OpenAI(max_retries=0)

    def ask(messages: list[dict[str, str]], stream: bool) -> str:
        if not stream:
            reply = client.chat.completions.create(model=MODEL, messages=messages)
            return reply.choices[0].message.content or ""
        chunks = client.chat.completions.create(
            model=MODEL,
            messages=messages,
            stream=True,
            stream_options={"include_usage": True},
        )
        return "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)

    return ask


def http_ask(messages: list[dict[str, str]], stream: bool) -> str:
    """The same requests as the SDK's, with urllib; a streamed answer read as SSE."""
    body: dict[str, Any] = {"model": MODEL, "messages": messages}
    if stream:
        body |= {"stream": True, "stream_options": {"include_usage": True}}
    request = urllib.request.Request(
        os.environ["OPENAI_BASE_URL"].rstrip("/") + "/chat/completions",
        json.dumps(body).encode(),
        {
            "authorization": f"Bearer {os.environ['OPENAI_API_KEY']}",
            "content-type": "application/json",
        },
    )
    with urllib.request.urlopen(request, timeout=60) as response:
        if not stream:
            return json.load(response)["choices"][0]["message"]["content"] or ""
        events = (line.decode().strip() for line in response)
        chunks = [json.loads(e[5:]) for e in events if e.startswith("data:") and "[DONE]" not in e]
        return "".join(c["delta"].get("content") or "" for x in chunks for c in x["choices"])


def main() -> None:
    args = [a for a in sys.argv[1:] if a != "--http"]
    ask = http_ask if "--http" in sys.argv[1:] else sdk_asker()
    task = args[0] if args else "fix the greeting"
    source = Path("greet.py")
    messages = [
        {"role": "system", "content": "You are a coding agent. Answer with one word."},
        {"role": "user", "content": f"{task}: {source.read_text()}"},
    ]
    word = ask(messages, False).strip()
    print(json.dumps({"name": "tool:call", "payload": {"name": "write_file", "args": {}}}))
    source.write_text(source.read_text().replace('"hi "', f'"{word} "'))
    note = ask([{"role": "user", "content": f"a release note for: {task}"}], True)
    Path("NOTES.md").write_text(note + "\n")
    print(f"done: {word}")


if __name__ == "__main__":
    main()
