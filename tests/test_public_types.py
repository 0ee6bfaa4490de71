"""The public API: the names `parlay` exports (a reviewed list, so a name joins or leaves
it on purpose), and what a user's type checker sees of them (mypy run on a user-style
file)."""

import inspect
import subprocess
import sys
from pathlib import Path

import parlay
import parlay.errors
import parlay.events

CHECKED = Path(__file__).parent / "typing_checks" / "parsed_types.py"

# Change this list only with the root's `__all__`: each name here is a promise to users.
PUBLIC = {
    # the session side
    "start_session", "Session", "SessionToolCallingProtocol", "ModelOutputThunk",
    "Context", "ContextDiff", "Turn", "Component", "Instruction",
    "Message", "SystemMessage", "UserMessage", "AssistantMessage", "ToolCall", "ToolResult",
    "Image",
    "tool", "Tool", "Toolbox", "MCPTools",
    "Store", "TurnRecorder", "TurnObserver", "CompletedTurn",
    "BranchTree", "compare", "Comparison", "replay_all", "areplay_all",
    # requirements checked and repaired (parlay.requirements)
    "req", "check", "simple_validate", "Requirement", "Validation", "JudgedBy",
    "Strategy", "RejectionSampling", "Repair", "BestOfN", "SampledThunk", "SamplingResult",
    "Attempt", "RequirementsNotMetError",
    # the backends
    "Backend", "Capabilities", "OpenAIBackend", "AnthropicBackend", "LocalBackend",
    "PromptedBackend", "ScriptedBackend",
    # the values a backend is asked with and reports
    "ChatRequest", "GenerationOptions", "ResponseFormat", "ToolChoice", "ToolSpec",
    "Diagnostics",
    # every event a stream yields, and what they carry
    "Event", "TextDelta", "ReasoningDelta", "ScoredTextDelta", "TokenChoice", "ToolCallStart",
    "ToolCallArgsDelta", "ToolCallEnd", "Finish", "Usage",
    # every error and warning a user may catch
    "ParlayError", "ConfigurationError", "InvalidRequestError", "ThunkError", "StoreError",
    "ToolDefinitionError", "ToolLoopError", "ToolChainLimitError", "ToolCallTruncatedError",
    "TurnCancelledError", "MCPServerError", "BackendError", "BackendConnectionError",
    "BackendTimeoutError", "BackendStatusError", "BackendRateLimitError",
    "BackendSchemaRejectedError", "BackendProtocolError", "BackendStreamCutError",
    "TemplateFolderNotAllowedError", "TemplateSecurityError", "ContextWindowExceeded",
    "UndescribedToolWarning", "MCPToolSkippedWarning",
}  # fmt: skip


def _classes_of(module: object) -> dict[str, type]:
    name = getattr(module, "__name__", "")
    return {
        n: c
        for n, c in inspect.getmembers(module, inspect.isclass)
        if c.__module__ == name and not n.startswith("_")
    }


def test_the_public_api_is_the_reviewed_list() -> None:
    exported = set(parlay.__all__)
    assert exported == PUBLIC, (
        f"exported but not reviewed: {sorted(exported - PUBLIC)}; "
        f"reviewed but not exported: {sorted(PUBLIC - exported)}"
    )
    assert len(parlay.__all__) == len(exported), "a name is listed twice in __all__"


def test_every_exported_name_imports() -> None:
    for name in parlay.__all__:
        assert getattr(parlay, name) is not None, name


def test_every_error_a_user_may_catch_is_exported() -> None:
    # The exceptions and warnings parlay raises are all in parlay.errors: a new one there
    # is caught by users, so it is exported (or this test says which is not).
    errors = _classes_of(parlay.errors)
    assert {"BackendRateLimitError", "BackendStreamCutError"} <= errors.keys()
    missing = sorted(name for name in errors if name not in parlay.__all__)
    assert not missing, f"errors a user may catch, not exported: {missing}"
    for name, error in errors.items():
        assert getattr(parlay, name) is error


def test_every_event_a_stream_yields_is_exported() -> None:
    events = _classes_of(parlay.events)
    assert {"TextDelta", "ScoredTextDelta", "ToolCallEnd", "Finish"} <= events.keys()
    missing = sorted(name for name in events if name not in parlay.__all__)
    assert not missing, f"event types not exported: {missing}"


def test_the_engine_internals_stay_in_their_modules() -> None:
    # The engine is reached through PromptedBackend; its checks, rules, refusal phrases
    # and retry records are imported from their own modules.
    from_the_engine = sorted(
        name
        for name in parlay.__all__
        if getattr(getattr(parlay, name), "__module__", "").startswith("parlay.engine")
    )
    assert from_the_engine == ["PromptedBackend"]
    for internal in ("RetryRecord", "RefusalPhrases", "DEFAULT_REFUSALS", "CallRule"):
        assert internal not in parlay.__all__
        assert not hasattr(parlay, internal), internal


def test_a_verbs_format_types_its_parsed_value() -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--no-incremental",
            "--strict",
            "--follow-imports=silent",
            str(CHECKED),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
