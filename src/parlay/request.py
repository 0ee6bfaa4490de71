"""What a backend is asked: messages, tool specs, tool choice, output format, options.

`ChatRequest` is the one internal structure that sessions build and that the wire codecs
decode OpenAI and Anthropic requests into.
"""

from __future__ import annotations

import difflib
from collections.abc import Collection, Mapping, Sequence
from typing import Any, Literal

from attrs import evolve, field, frozen

from parlay.errors import InvalidRequestError
from parlay.messages import Message, ToolResult

ToolChoiceMode = Literal["auto", "none", "required", "tool"]


def _tuple(value: Any) -> tuple[Any, ...]:
    return tuple(value)


def _dict(value: Mapping[str, Any] | None) -> dict[str, Any]:
    return dict(value or {})


@frozen
class ToolSpec:
    """A tool as a model sees it: name, description and JSON schema of the arguments."""

    name: str
    description: str = ""
    parameters: dict[str, Any] = field(
        factory=lambda: {"type": "object", "properties": {}}, converter=_dict, hash=False
    )
    # Offered but not shown until a tool result references it (Anthropic's and OpenAI's
    # `defer_loading`): a call to it is still a call to an offered tool.
    deferred: bool = False


def shown_tools(tools: Sequence[ToolSpec], messages: Sequence[Message]) -> tuple[ToolSpec, ...]:
    """The tools a model is shown: those not deferred, and the deferred ones a tool result
    in `messages` references. Derived from the history alone: the proxy keeps no state."""
    if not any(spec.deferred for spec in tools):
        return tuple(tools)
    named = {n for m in messages if isinstance(m, ToolResult) for n in m.references}
    return tuple(spec for spec in tools if not spec.deferred or spec.name in named)


@frozen
class ToolChoice:
    """Whether the model may, must, or must not call a tool, or must call one named tool."""

    mode: ToolChoiceMode = "auto"
    name: str | None = None

    def __attrs_post_init__(self) -> None:
        if self.mode not in ("auto", "none", "required", "tool"):
            raise InvalidRequestError(
                f"tool_choice mode {self.mode!r} is not one of auto, none, required, tool"
            )
        if (self.mode == "tool") != (self.name is not None):
            raise InvalidRequestError("tool_choice names a tool exactly when its mode is 'tool'")

    @classmethod
    def coerce(cls, value: ToolChoice | str | None) -> ToolChoice:
        """Accept a ToolChoice, None (auto), 'auto' / 'none' / 'required', or a tool name."""
        if value is None:
            return AUTO
        if isinstance(value, ToolChoice):
            return value
        if value in ("auto", "none", "required"):
            return cls(value)  # type: ignore[arg-type]
        if isinstance(value, str) and value:
            return cls("tool", value)
        raise InvalidRequestError(
            f"tool_choice {value!r} is not understood: use 'auto', 'none', 'required' "
            "or a tool name"
        )

    @property
    def forces_call(self) -> bool:
        return self.mode in ("required", "tool")


def unknown_choice(name: str, tool_names: Collection[str]) -> str:
    """What to say of a tool_choice that names no tool: the choices, and a near miss."""
    modes = ("auto", "none", "required")
    near = difflib.get_close_matches(name, [*modes, *tool_names], n=1)
    known = ", ".join(sorted(tool_names)) or "none"
    hint = f"; did you mean {near[0]!r}?" if near else ""
    return (
        f"tool_choice {name!r} is neither auto, none nor required, and names none of the "
        f"tools ({known}){hint}"
    )


AUTO = ToolChoice("auto")
NONE = ToolChoice("none")
REQUIRED = ToolChoice("required")
# OpenAI's limit on alternatives per token, which llama.cpp and vLLM accept too.
MAX_TOP_LOGPROBS = 20


@frozen
class ResponseFormat:
    """Structured output: the reply must be JSON matching `schema`."""

    schema: dict[str, Any] = field(converter=_dict, hash=False)
    name: str = "response"
    strict: bool = True


@frozen
class GenerationOptions:
    temperature: float | None = None
    top_p: float | None = None
    max_tokens: int | None = None
    stop: tuple[str, ...] = field(default=(), converter=_tuple)
    seed: int | None = None
    # Alternatives per generated token to report (`TextDelta.tokens`): OpenAI's
    # `top_logprobs`, 0 to 20. None: no log-probabilities asked for.
    top_logprobs: int | None = field(default=None)
    # Whether the model may make several calls in one reply (OpenAI's
    # `parallel_tool_calls`, Anthropic's `disable_parallel_tool_use` the other way round).
    # None: the backend's default, which allows them. A session's requests carry it.
    parallel_tool_calls: bool | None = None
    # OpenAI's repetition penalties, -2 to 2 (sent by OpenAI-compatible backends, llama.cpp
    # and vLLM included; Anthropic has none).
    presence_penalty: float | None = None
    frequency_penalty: float | None = None

    @top_logprobs.validator
    def _check_top_logprobs(self, _attribute: Any, value: int | None) -> None:
        if value is not None and not 0 <= value <= MAX_TOP_LOGPROBS:
            raise InvalidRequestError(
                f"top_logprobs must be between 0 and {MAX_TOP_LOGPROBS}, got {value}"
            )


@frozen
class ChatRequest:
    messages: tuple[Message, ...] = field(converter=_tuple)
    tools: tuple[ToolSpec, ...] = field(default=(), converter=_tuple)
    tool_choice: ToolChoice = AUTO
    parallel_tool_calls: bool = True
    response_format: ResponseFormat | None = None
    options: GenerationOptions = GenerationOptions()
    model: str | None = None
    # Provider-specific fields passed through untouched (e.g. vLLM's guided_json).
    extra_body: dict[str, Any] = field(factory=dict, converter=_dict, hash=False)

    def __attrs_post_init__(self) -> None:
        if self.tool_choice.mode == "tool":
            names = {spec.name for spec in self.tools}
            if self.tool_choice.name not in names:
                raise InvalidRequestError(unknown_choice(self.tool_choice.name or "", names))

    def replace(self, **changes: Any) -> ChatRequest:
        return evolve(self, **changes)

    def shown_tools(self) -> tuple[ToolSpec, ...]:
        """The tools the model is shown (`shown_tools`), and the one tool_choice forces."""
        shown = shown_tools(self.tools, self.messages)
        forced = self.tool_choice.name
        if forced is None or any(spec.name == forced for spec in shown):
            return shown
        return tuple(spec for spec in self.tools if spec in shown or spec.name == forced)
