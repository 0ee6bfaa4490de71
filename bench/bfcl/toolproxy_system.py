"""toolproxy 0.6's emulated tool calling, driven as its README shows a user doing it.

Not a dependency of parlay: install it into the bench's environment by hand,

    pip install --no-deps toolproxy==0.6.0

(its own requirements, httpx, openai and pydantic, are already parlay's or its `dev`
extra's). `UniversalAgent(mode="emulated_only")` with its default
`allow_parallel_emulated=True` puts the tools in its system prompt and reads the JSON
action the model writes back (one call, several, or a final answer), asking again up to
three times when the reply does not parse. The tools are BFCL's functions as pydantic
models (what `@tool` builds from a signature: each parameter's type, its description,
a default for the optional ones); calling one only records the call. The agent gets one
step (`max_steps=1`): the calls of that step are the answer, and the
`MaxStepsExceededError` that ends it is expected.

The one change to toolproxy's client: temperature 0, seed 0 and the bench's token
budget go into each request (toolproxy sends no sampling settings, and llama.cpp's own
default is temperature 0.8 with no length limit), and the timeout is longer than its
60 s for this CPU.
"""

from __future__ import annotations

import re
import time
from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, create_model

from bench.bfcl.data import Question
from bench.bfcl.outcome import Reply
from bench.bfcl.systems import Setup
from parlay.context import AssistantMessage, Message, SystemMessage, UserMessage

VERSION = "0.6.0"
_TYPES: dict[str, type] = {
    "string": str,
    "integer": int,
    "number": float,
    "boolean": bool,
    "array": list,
    "object": dict,
}


def _client_class() -> type:
    from toolproxy import OpenAIClient

    class GreedyClient(OpenAIClient):
        """toolproxy's OpenAI client with greedy decoding and a token budget."""

        def __init__(self, max_tokens: int, **kwargs: Any) -> None:
            super().__init__(**kwargs)
            self.max_tokens = max_tokens
            self.texts: list[str] = []
            self.usage = [0, 0]

        def _build_body(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
            body: dict[str, Any] = super()._build_body(*args, **kwargs)
            body.update(temperature=0.0, seed=0, max_tokens=self.max_tokens)
            return body

        async def agenerate(self, *args: Any, **kwargs: Any) -> Any:
            response = await super().agenerate(*args, **kwargs)
            self.texts.append(response.raw_text or "")
            usage = (response.raw or {}).get("usage") or {}
            self.usage[0] += int(usage.get("prompt_tokens") or 0)
            self.usage[1] += int(usage.get("completion_tokens") or 0)
            return response

    return GreedyClient


def args_model(function: Mapping[str, Any], parameters: Mapping[str, Any]) -> type[BaseModel]:
    """A tool's arguments as the pydantic model a user would write for it."""
    required = set(parameters.get("required") or ())
    fields: dict[str, Any] = {}
    for index, (name, schema) in enumerate((parameters.get("properties") or {}).items()):
        kind = _TYPES.get(schema.get("type", ""), Any)
        default = ... if name in required else schema.get("default")
        # BFCL names like `from` or `_id` are no Python identifiers: an alias keeps them.
        fields[f"p{index}"] = (
            kind,
            Field(default, alias=name, description=schema.get("description") or None),
        )
    title = re.sub(r"\W", "_", function["name"]).capitalize() + "Args"
    config = ConfigDict(populate_by_name=True, arbitrary_types_allowed=True)
    return create_model(title, __config__=config, **fields)


def role(message: Message) -> Literal["system", "user", "assistant"]:
    if isinstance(message, SystemMessage):
        return "system"
    if isinstance(message, UserMessage):
        return "user"
    if isinstance(message, AssistantMessage):
        return "assistant"
    raise TypeError(f"BFCL questions hold no {type(message).__name__}")


class ToolproxySystem:
    def __init__(self, setup: Setup) -> None:
        self.setup = setup
        self.name = "toolproxy"
        if not setup.prompt_cache:
            # Its own client builds the requests: `cache_prompt` cannot be sent.
            raise ValueError("toolproxy cannot be asked without llama.cpp's prompt cache")
        self.config = setup.config("toolproxy", version=VERSION, max_tokens=setup.max_tokens)

    def _tools(self, question: Question, calls: list[tuple[str, Any]]) -> list[Any]:
        from toolproxy.tools import ToolDefinition

        def recorder(**arguments: Any) -> str:
            return "done"

        return [
            ToolDefinition(
                name=function["name"],
                description=function.get("description", ""),
                callable=recorder,
                args_schema=args_model(function, spec.parameters),
            )
            for function, spec in zip(question.offered, question.offered_tools, strict=True)
        ]

    async def answer(self, question: Question) -> Reply:
        from toolproxy import MaxStepsExceededError, ModelError, UniversalAgent
        from toolproxy.schemas import Message as ProxyMessage

        client = _client_class()(
            self.setup.max_tokens,
            model="model",
            api_key="none",
            base_url=self.setup.base_url,
            native_tools=False,
            timeout=900.0,
        )
        calls: list[tuple[str, Any]] = []

        def on_tool_call(step: int, call: Any) -> None:
            calls.append((call.tool_name, dict(call.arguments)))

        agent = UniversalAgent(
            model="model",
            tools=self._tools(question, calls),
            mode="emulated_only",
            max_steps=1,
            client=client,
        )
        messages = [ProxyMessage(role=role(m), content=m.content) for m in question.messages]
        started = time.perf_counter()
        text, notes, error = "", [], ""
        try:
            response = await agent.arun(messages, on_tool_call=on_tool_call)
            text = response.content
        except MaxStepsExceededError:
            pass  # the one step is over: its calls are the answer
        except ModelError as exc:
            error = f"ModelError: {exc}"
        except Exception as exc:  # no parse after its retries, or a tool it could not run
            notes.append(f"{type(exc).__name__}: {str(exc)[:300]}")
        return Reply(
            calls,
            text or "\n---\n".join(client.texts),
            error,
            time.perf_counter() - started,
            retries=[f"attempt {i + 1}" for i in range(1, len(client.texts))],
            notes=notes,
            prompt_tokens=client.usage[0],
            completion_tokens=client.usage[1],
        )


def toolproxy_system(setup: Setup) -> ToolproxySystem:
    return ToolproxySystem(setup)
