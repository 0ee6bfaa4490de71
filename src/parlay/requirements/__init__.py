"""Requirements that are checked and repaired: instruct, validate, try again.

```python
from parlay.requirements import RejectionSampling, check, req

reply = session.instruct(
    "Write a haiku about the sea.",
    requirements=["Mention a boat", req("At most 20 words", lambda t: len(t.split()) <= 20)],
    strategy=RejectionSampling(3),
)
reply.value, reply.success, reply.sampling.attempts
```

Without a `strategy` nothing is checked: the requirements are only written into the
instruction, as before. See docs/requirements.md.
"""

from parlay.requirements.judge import JUDGE_OPTIONS, Judging, judge_prompt, verdict
from parlay.requirements.requirement import (
    JudgedBy,
    Requirement,
    ValidateFn,
    Validation,
    as_requirements,
    check,
    req,
    simple_validate,
)
from parlay.requirements.results import Attempt, RequirementsNotMetError, SamplingResult
from parlay.requirements.sampling import SampledThunk
from parlay.requirements.strategies import (
    BestOfN,
    NextAttempt,
    RejectionSampling,
    Repair,
    SamplingStrategy,
    Strategy,
    best,
    repair_message,
)
from parlay.requirements.verbs import output_text

__all__ = [
    "JUDGE_OPTIONS",
    "Attempt",
    "BestOfN",
    "JudgedBy",
    "Judging",
    "NextAttempt",
    "RejectionSampling",
    "Repair",
    "Requirement",
    "RequirementsNotMetError",
    "SampledThunk",
    "SamplingResult",
    "SamplingStrategy",
    "Strategy",
    "ValidateFn",
    "Validation",
    "as_requirements",
    "best",
    "check",
    "judge_prompt",
    "output_text",
    "repair_message",
    "req",
    "simple_validate",
    "verdict",
]
