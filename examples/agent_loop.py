"""An agent loop that recalls before it answers and remembers every turn.

    python examples/agent_loop.py --store agent.muster                       # any OpenAI-compatible server:
    OPENAI_BASE_URL=http://127.0.0.1:8000/v1 OPENAI_API_KEY=x python examples/agent_loop.py --model qwen2.5-7b

Each turn: the memory's context for the user's message goes into the prompt
(verbatim excerpts, in stored order), the model answers, and both the message
and the answer are kept, so the next turn can recall them. Nothing calls a
model to build or grow the memory.
"""

from __future__ import annotations

import argparse
import os

from openai import OpenAI

from muster_exact import Store


def turn(store: Store, client: OpenAI, model: str, message: str) -> str:
    memory = store.context(message).text if store.head().records else ""
    reply = client.chat.completions.create(
        model=model,
        temperature=0,
        messages=[
            {
                "role": "system",
                "content": "You are a helpful assistant with a long-term memory. "
                "Use the memory excerpts when they help; say so when they do not contain the answer.",
            },
            {"role": "user", "content": f"Memory excerpts:\n{memory or '(empty)'}\n\nMessage: {message}"},
        ],
    )
    answer = reply.choices[0].message.content or ""
    store.add([{"speaker": "user", "text": message}, {"speaker": "assistant", "text": answer}])
    return answer


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--store", default="agent.muster")
    parser.add_argument("--model", default=os.environ.get("OPENAI_MODEL", "gpt-4o-mini"))
    parser.add_argument("--models", default="cpu-small", help="MUSTER's retrieval model profile")
    args = parser.parse_args()
    client = OpenAI()  # OPENAI_API_KEY and OPENAI_BASE_URL from the environment
    with Store.open(args.store, models=args.models) as store:
        print(f"memory: {store.head().records} records in {args.store}; an empty line quits")
        while message := input("> ").strip():
            print(turn(store, client, args.model, message))


if __name__ == "__main__":
    main()
