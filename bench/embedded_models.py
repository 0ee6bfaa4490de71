"""Which model a newcomer should get as the embedded default: SmolLM2-135M against
Qwen2.5-Coder-0.5B on the docs' own tool examples, each run as a session on the embedded
llama.cpp runtime, as `start_session()` would with that model.

For each example: did the model call the right tool with the right arguments, does the
answer carry the tool's result, and how long did it take (model load included for the
first). Also each model's download size and load time. Sampling is greedy, as
`start_session()` runs the embedded model.

    flock /tmp/parlay-model.lock python -m bench.embedded_models [--repeat 3]

Prints a table and writes bench/results/embedded-models.md.
"""

from __future__ import annotations

import argparse
import re
import time
from collections.abc import Callable
from typing import Any

from attrs import frozen

import parlay
from bench._table import markdown_table, write_result
from bench.bfcl.models import models
from parlay.start import embedded_backend, greedy


def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def multiply(a: int, b: int) -> int:
    """Multiply two integers."""
    return a * b


def order_status(order_id: str) -> dict[str, str]:
    """Look up the shipping status of an order.

    Args:
        order_id: The order number, like A-1042.
    """
    return {"order_id": order_id, "status": "shipped"}


@frozen
class Example:
    where: str  # the page the example comes from
    tools: tuple[Callable[..., Any], ...]
    ask: Callable[[parlay.Session], Any]  # runs the session's verb, returns the thunk
    call: tuple[str, dict[str, Any]]  # the call a right answer makes
    answer: str  # what the answer must contain (the tool's result)


EXAMPLES = (
    Example("README: order status", (order_status,),
            lambda s: s.query("Order A-1042", "Has it shipped?"),
            ("order_status", {"order_id": "A-1042"}), "shipped"),
    Example("quickstart: 1234 + 4321", (add,),
            lambda s: s.chat("What is 1234 + 4321?", run_tools=True),
            ("add", {"a": 1234, "b": 4321}), "5555"),
    Example("tool-results: query a + b", (add,),
            lambda s: s.query({"a": 2, "b": 3}, "What is a + b?", chain_limit=3),
            ("add", {"a": 2, "b": 3}), "5"),
    Example("tool-results: 2 + 3", (add,),
            lambda s: s.chat("What is 2 + 3?", run_tools=True),
            ("add", {"a": 2, "b": 3}), "5"),
    Example("cli: 7 times 6", (multiply,),
            lambda s: s.chat("What is 7 times 6?", run_tools=True),
            ("multiply", {"a": 7, "b": 6}), "42"),
    Example("issue 40: a + b with two tools", (add, multiply),
            lambda s: s.query({"a": 6, "b": 7}, "What is a + b?"),
            ("add", {"a": 6, "b": 7}), "13"),
)  # fmt: skip


def run_example(backend: parlay.Backend, example: Example) -> dict[str, Any]:
    # Greedy, as `start_session()` runs the embedded model.
    session = parlay.Session(backend, tools=list(example.tools), options=greedy(None))
    started = time.perf_counter()
    try:
        thunk = example.ask(session)
        text = str(thunk.value)
        calls = [
            (item.name, item.arguments)
            for message in thunk.steps
            for item in getattr(message, "tool_calls", ())
        ]
        error = ""
    except Exception as exc:  # a chain limit, a cut call: counted as a miss
        text, calls, error = "", [], type(exc).__name__
    seconds = time.perf_counter() - started
    name, arguments = example.call
    right_call = any(n == name and a == arguments for n, a in calls)
    # The result as a word of its own: "5" in a call id is no answer.
    right_answer = re.search(rf"(?<![\w.-]){re.escape(example.answer)}(?![\w-])", text) is not None
    return {
        "right_call": right_call,
        "right_answer": right_answer,
        "carries_result": right_answer and right_call,
        "seconds": seconds,
        "answer": text[:80].replace("\n", " ").replace("|", "/"),
        "error": error,
    }


def count(outcomes: list[dict[str, Any]], key: str) -> str:
    return f"{sum(o[key] for o in outcomes)}/{len(outcomes)}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", default="smollm2,qwen")
    parser.add_argument("--repeat", type=int, default=1, help="runs of each example")
    args = parser.parse_args()
    rows: list[list[object]] = []
    summary: list[list[object]] = []
    for model in models(tuple(args.models.split(","))):
        # As `start_session(model=...)` and `-m NAME` run it.
        backend = embedded_backend(model.key)
        started = time.perf_counter()
        _ = parlay.Session(backend).chat("Say hi.").value  # loads the model
        load = time.perf_counter() - started
        everything: list[dict[str, Any]] = []
        for example in EXAMPLES:
            outcomes = [run_example(backend, example) for _ in range(args.repeat)]
            everything += outcomes
            last = outcomes[-1]
            rows.append([model.key, example.where, count(outcomes, "right_call"),
                         count(outcomes, "right_answer"), count(outcomes, "carries_result"),
                         f"{sum(o['seconds'] for o in outcomes) / len(outcomes):.1f}",
                         last["error"] or last["answer"]])  # fmt: skip
            print(rows[-1], flush=True)
        size = model.path.stat().st_size / 2**20
        summary.append([
            model.label, f"{size:.0f} MiB", f"{load:.1f}", count(everything, "right_call"),
            count(everything, "right_answer"), count(everything, "carries_result"),
            f"{sum(o['seconds'] for o in everything) / len(everything):.1f}",
        ])  # fmt: skip
    headers = ["model", "example", "right call", "right answer", "built on the tool's result",
               "mean seconds", "last answer"]  # fmt: skip
    table = markdown_table(headers, rows)
    totals = markdown_table(
        ["model", "file", "load + first reply (s)", "right calls", "right answers",
         "built on the tool's result", "mean seconds an example"], summary,
    )  # fmt: skip
    print(totals)
    print(table)
    how = (
        f"Each example {args.repeat} time(s), greedy (temperature 0, as `start_session()` "
        "runs the embedded model), on 2 cores. A right answer holds the expected value as a "
        "word of its own; 'built on the tool's result' is a right answer after the right "
        "call."
    )
    write_result(
        "embedded-models",
        "The embedded default: SmolLM2-135M against Qwen2.5-Coder-0.5B on the docs' examples",
        [("How", how), ("Totals", totals), ("Each example", table)],
    )


if __name__ == "__main__":
    main()
