"""parlay: sessions for chat models, with tool calling that works on every model.

What a user needs is here: the session side (`start_session`, `Session`, `Context` and
its messages, `ModelOutputThunk`, tools, the log, branches and replays), the backends,
the values they share (`ChatRequest`, `ToolSpec`, `Diagnostics`, ...), requirements
checked and repaired (`req`, `check`, `RejectionSampling`, ... of `parlay.requirements`),
every event a stream yields and every error a user may catch. The list is pinned by
tests/test_public_types.py. The engine's parts stay in their modules: checks of your
own are written against `parlay.engine.checks`, a retry's record is
`parlay.diagnostics.RetryRecord`.
"""

from typing import TYPE_CHECKING, Any

from parlay._version import __version__ as __version__
from parlay.backends.anthropic import AnthropicBackend
from parlay.backends.base import Backend, Capabilities
from parlay.backends.local import LocalBackend
from parlay.backends.openai import OpenAIBackend
from parlay.backends.scripted import ScriptedBackend
from parlay.branches import BranchTree
from parlay.compare import Comparison, compare
from parlay.components import Instruction
from parlay.context import (
    AssistantMessage,
    Component,
    Context,
    Message,
    SystemMessage,
    ToolCall,
    ToolResult,
    UserMessage,
)
from parlay.diagnostics import Diagnostics
from parlay.engine.backend import PromptedBackend
from parlay.errors import (
    BackendConnectionError,
    BackendError,
    BackendProtocolError,
    BackendRateLimitError,
    BackendSchemaRejectedError,
    BackendStatusError,
    BackendStreamCutError,
    BackendTimeoutError,
    ConfigurationError,
    ContextWindowExceeded,
    InvalidRequestError,
    MCPServerError,
    MCPToolSkippedWarning,
    ParlayError,
    StoreError,
    TemplateFolderNotAllowedError,
    TemplateSecurityError,
    ThunkError,
    ToolCallTruncatedError,
    ToolChainLimitError,
    ToolDefinitionError,
    ToolLoopError,
    TurnCancelledError,
    UndescribedToolWarning,
)
from parlay.events import (
    Event,
    Finish,
    ReasoningDelta,
    ScoredTextDelta,
    TextDelta,
    TokenChoice,
    ToolCallArgsDelta,
    ToolCallEnd,
    ToolCallStart,
    Usage,
)
from parlay.image import Image
from parlay.observers import CompletedTurn, TurnObserver
from parlay.replay import areplay_all, replay_all
from parlay.request import ChatRequest, GenerationOptions, ResponseFormat, ToolChoice, ToolSpec
from parlay.requirements import (
    Attempt,
    BestOfN,
    JudgedBy,
    RejectionSampling,
    Repair,
    Requirement,
    RequirementsNotMetError,
    SampledThunk,
    SamplingResult,
    Strategy,
    Validation,
    check,
    req,
    simple_validate,
)
from parlay.session import Session, SessionToolCallingProtocol
from parlay.start import start_session
from parlay.store import Store, TurnRecorder
from parlay.thunk import ModelOutputThunk
from parlay.tools import Tool, Toolbox, tool
from parlay.turns import ContextDiff, Turn

if TYPE_CHECKING:
    from parlay.mcp import MCPTools


def __getattr__(name: str) -> Any:
    # `parlay.MCPTools` without `import parlay` importing the MCP SDK (about a second).
    if name == "MCPTools":
        from parlay.mcp import MCPTools

        return MCPTools
    raise AttributeError(f"module 'parlay' has no attribute {name!r}")


__all__ = [
    "AnthropicBackend",
    "AssistantMessage",
    "Attempt",
    "Backend",
    "BackendConnectionError",
    "BackendError",
    "BackendProtocolError",
    "BackendRateLimitError",
    "BackendSchemaRejectedError",
    "BackendStatusError",
    "BackendStreamCutError",
    "BackendTimeoutError",
    "BestOfN",
    "BranchTree",
    "Capabilities",
    "ChatRequest",
    "Comparison",
    "CompletedTurn",
    "Component",
    "ConfigurationError",
    "Context",
    "ContextDiff",
    "ContextWindowExceeded",
    "Diagnostics",
    "Event",
    "Finish",
    "GenerationOptions",
    "Image",
    "Instruction",
    "InvalidRequestError",
    "JudgedBy",
    "LocalBackend",
    "MCPServerError",
    "MCPToolSkippedWarning",
    "MCPTools",
    "Message",
    "ModelOutputThunk",
    "OpenAIBackend",
    "ParlayError",
    "PromptedBackend",
    "ReasoningDelta",
    "RejectionSampling",
    "Repair",
    "Requirement",
    "RequirementsNotMetError",
    "ResponseFormat",
    "SampledThunk",
    "SamplingResult",
    "ScoredTextDelta",
    "ScriptedBackend",
    "Session",
    "SessionToolCallingProtocol",
    "Store",
    "StoreError",
    "Strategy",
    "SystemMessage",
    "TemplateFolderNotAllowedError",
    "TemplateSecurityError",
    "TextDelta",
    "ThunkError",
    "TokenChoice",
    "Tool",
    "ToolCall",
    "ToolCallArgsDelta",
    "ToolCallEnd",
    "ToolCallStart",
    "ToolCallTruncatedError",
    "ToolChainLimitError",
    "ToolChoice",
    "ToolDefinitionError",
    "ToolLoopError",
    "ToolResult",
    "ToolSpec",
    "Toolbox",
    "Turn",
    "TurnCancelledError",
    "TurnObserver",
    "TurnRecorder",
    "UndescribedToolWarning",
    "Usage",
    "UserMessage",
    "Validation",
    "areplay_all",
    "check",
    "compare",
    "replay_all",
    "req",
    "simple_validate",
    "start_session",
    "tool",
]
