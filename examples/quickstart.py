"""The main job: a session on the embedded local model that calls a tool.

    python examples/quickstart.py

The model (SmolLM2-135M, 94 MiB) runs in-process through llama.cpp; no API key, no
network. It cannot know the answer, so it has to call the tool.
"""

from __future__ import annotations

import parlay


@parlay.tool
def order_status(order_id: str) -> dict[str, str]:
    """Look up the shipping status of an order.

    Args:
        order_id: The order number, like A-1042.
    """
    statuses = {"A-1042": "shipped on 2026-11-20, arriving Tuesday"}
    return {"order_id": order_id, "status": statuses.get(order_id, "not found")}


def main() -> None:
    # Greedy and bounded: a 135M model can loop on its own words after a tool result.
    options = parlay.GenerationOptions(temperature=0, max_tokens=160)
    session = parlay.start_session(tools=[order_status], options=options)
    answer = session.query("Order A-1042", "What is the shipping status of this order?")
    for delta in answer:
        print(delta, end="", flush=True)
    print()
    for message in answer.steps:
        if isinstance(message, parlay.AssistantMessage):
            for call in message.tool_calls:
                print(f"[tool call] {call.name}({call.arguments_json})")
        elif isinstance(message, parlay.ToolResult):
            print(f"[tool result] {message.content}")
    if not any(isinstance(m, parlay.ToolResult) for m in answer.steps):
        raise SystemExit("the model answered without calling the tool")


if __name__ == "__main__":
    main()
