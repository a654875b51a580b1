"""A coding agent that asks a model what to write, like a CLI coding agent would.

It uses the ``openai`` SDK configured by the environment alone (``OPENAI_BASE_URL``,
``OPENAI_API_KEY``): one plain call for the greeting word, one streamed call for a note.
Usage: model_agent.py [TASK]; it works in its cwd (the workspace).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import openai


def main() -> None:
    task = sys.argv[1] if len(sys.argv) > 1 else "fix the greeting"
    client = openai.OpenAI(max_retries=0)
    source = Path("greet.py")
    messages = [
        {"role": "system", "content": "You are a coding agent. Answer with one word."},
        {"role": "user", "content": f"{task}: {source.read_text()}"},
    ]
    reply = client.chat.completions.create(model="gpt-4o-mini", messages=messages)
    word = (reply.choices[0].message.content or "").strip()
    print(json.dumps({"name": "tool:call", "payload": {"name": "write_file", "args": {}}}))
    source.write_text(source.read_text().replace('"hi "', f'"{word} "'))
    stream = client.chat.completions.create(
        model="gpt-4o-mini",
        messages=[{"role": "user", "content": f"a release note for: {task}"}],
        stream=True,
        stream_options={"include_usage": True},
    )
    note = "".join(c.choices[0].delta.content or "" for c in stream if c.choices)
    Path("NOTES.md").write_text(note + "\n")
    print(f"done: {word}")


if __name__ == "__main__":
    main()
