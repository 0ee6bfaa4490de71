"""Mellea's own `instruct` with its `RejectionSamplingStrategy` on the requirements bench's
tasks, against a running llama.cpp server. Run by bench/requirements.py with the python
of Mellea's venv (it imports no parlay: only bench/requirements_tasks.py).

Mellea's sampling has one set of model options for every attempt, so all its attempts
sample at the given temperature. Tool tasks are skipped: llama.cpp drops tools for a
chat template without tool support (SmolLM2's), and Mellea has no prompted tool calling.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent.parent))

from bench.requirements_tasks import TASKS


def main() -> None:
    from mellea import MelleaSession
    from mellea.backends import ModelOption
    from mellea.backends.openai import OpenAIBackend
    from mellea.stdlib.requirements import req, simple_validate
    from mellea.stdlib.sampling import RejectionSamplingStrategy

    parser = argparse.ArgumentParser()
    parser.add_argument("--url", required=True)
    parser.add_argument("--model", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--budget", type=int, default=3)
    parser.add_argument("--max-tokens", type=int, default=48)
    parser.add_argument("--temperature", type=float, default=0.8)
    parser.add_argument("tasks", nargs="*")
    args = parser.parse_args()
    options = {
        ModelOption.MAX_NEW_TOKENS: args.max_tokens,
        ModelOption.TEMPERATURE: args.temperature,
    }
    backend = OpenAIBackend(
        model_id=args.model, base_url=args.url, api_key="none", model_options=options
    )
    for task in TASKS:
        if args.tasks and task.name not in args.tasks:
            continue
        row = {"model": args.model, "system": "mellea", "strategy": "RejectionSampling",
               "task": task.name, "kind": task.kind}  # fmt: skip
        if task.tool is not None:
            row |= {"seconds": 0.0, "attempts": [], "error": "skipped: a tool task"}
        else:
            row |= run(task, backend, args.budget, MelleaSession, req, simple_validate,
                       RejectionSamplingStrategy)  # fmt: skip
        with open(args.out, "a") as out:
            out.write(json.dumps(row) + "\n")
        print("mellea", task.name, [a["passed"] for a in row["attempts"]], flush=True)


def run(task, backend, budget, MelleaSession, req, simple_validate, Strategy):  # type: ignore[no-untyped-def]
    def validator(check):  # type: ignore[no-untyped-def]
        return simple_validate(lambda text: check(text)[0])

    requirements = [
        req(rule.description, validation_fn=validator(rule.check)) for rule in task.rules
    ]
    session = MelleaSession(backend)
    started = time.monotonic()
    try:
        result = session.instruct(
            task.description,
            requirements=requirements,
            strategy=Strategy(loop_budget=budget),
            return_sampling_results=True,
        )
    except Exception as error:
        return {"seconds": time.monotonic() - started, "attempts": [],
                "error": f"{type(error).__name__}: {error}"}  # fmt: skip
    seconds = time.monotonic() - started
    texts = [str(g.value) for g in result.sample_generations]
    share = seconds / max(1, len(texts))  # Mellea keeps no time per attempt: apportioned
    attempts = []
    for text in texts:
        checks = [rule.check(text)[0] for rule in task.rules]
        attempts.append({"passed": all(checks), "met": sum(checks), "requests": 1,
                         "seconds": share, "text": text[:300]})  # fmt: skip
    return {"seconds": seconds, "attempts": attempts}


if __name__ == "__main__":
    main()
