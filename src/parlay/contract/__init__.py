"""The prompt-contract engine: pure, I/O-free pieces the prompted backend puts together.

- `render`: the contract (system prompt, few-shot turns, projected history) from templates;
- `parser`: the incremental action parser (three formats, tolerant, streaming);
- `repair`: schema-aware repair of parsed calls;
- `refusal`: refusal detection with a user-extensible phrase set;
- `retry`: the retry policy;
- `state`: where a conversation stands in the tool protocol, from its messages;
- `constrain`: the JSON schema of valid actions, for constrained decoding.
"""

from parlay.contract.constrain import action_response_format, action_schema
from parlay.contract.parser import ActionStreamParser, ParseProblem, ParseResult, parse
from parlay.contract.refusal import (
    DEFAULT_REFUSALS,
    RefusalPhrases,
    RefusalSignal,
    detect_refusal,
)
from parlay.contract.render import (
    DEFAULT_FORMAT,
    FORMATS,
    Contract,
    ContractOptions,
    project_history,
    render_call,
    render_contract,
    render_results,
)
from parlay.contract.repair import Repaired, repair_call
from parlay.contract.retry import CallIssue, RetryPolicy, Verdict
from parlay.contract.state import ToolState, has_tool_activity, tool_state

__all__ = [
    "DEFAULT_FORMAT",
    "DEFAULT_REFUSALS",
    "FORMATS",
    "ActionStreamParser",
    "CallIssue",
    "Contract",
    "ContractOptions",
    "ParseProblem",
    "ParseResult",
    "RefusalPhrases",
    "RefusalSignal",
    "Repaired",
    "RetryPolicy",
    "ToolState",
    "Verdict",
    "action_response_format",
    "action_schema",
    "detect_refusal",
    "has_tool_activity",
    "parse",
    "project_history",
    "render_call",
    "render_contract",
    "render_results",
    "repair_call",
    "tool_state",
]
