"""The session's requirement verbs: `validate`, and `instruct` with a strategy.

`Session` inherits `CheckedTurns`; each attempt of a checked instruction is a branch of
the session (`session.branches`, `parlay.compare`, the log's tree), and the session's
own context keeps the chosen attempt.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from attrs import evolve

from parlay._sync import run_sync
from parlay.backends.base import Backend
from parlay.context import AssistantMessage, Context, Item, UserMessage
from parlay.request import GenerationOptions
from parlay.requirements.judge import Judging, validate_all
from parlay.requirements.requirement import Requirement, Validation, as_requirements
from parlay.requirements.sampling import Sampler, format_requirement
from parlay.requirements.strategies import NextAttempt, Strategy
from parlay.thunk import ModelOutputThunk

if TYPE_CHECKING:
    from typing import Self

    from pydantic import BaseModel

    from parlay.request import ToolChoice


async def output_text(output: str | ModelOutputThunk[Any] | Context) -> str:
    """The text to check: a string as it is, a thunk's value (awaited), or a context's
    newest model output."""
    if isinstance(output, str):
        return output
    if isinstance(output, ModelOutputThunk):
        return (await output).value
    for item in output.reversed_items():
        if isinstance(item, ModelOutputThunk):
            return (await item).value
        if isinstance(item, AssistantMessage):
            return item.content
    raise ValueError("the context holds no model output to validate: pass output=")


class CheckedTurns:
    """`validate` / `avalidate`, and the checked form of `instruct`, for `Session`."""

    backend: Backend
    options: GenerationOptions

    if TYPE_CHECKING:  # Session's; declared here for the type checker only
        _ctx: Context

        def _branch(self, ctx: Context, name: str | None) -> Self: ...

        def fork(self, *, at: int | None = None, name: str | None = None) -> Self: ...

        def _turn(
            self,
            item: Item | None,
            tool_choice: ToolChoice | str | None,
            format: type[BaseModel] | None,
            options: GenerationOptions | None,
            run_tools: bool,
            chain_limit: int | None = None,
            sampler: Sampler | None = None,
        ) -> ModelOutputThunk[Any]: ...

    def validate(
        self,
        requirements: Sequence[str | Requirement],
        *,
        output: str | ModelOutputThunk[Any] | None = None,
        judge: Backend | None = None,
        template_dir: str | os.PathLike[str] | None = None,
    ) -> tuple[Validation, ...]:
        """Check `requirements` against `output` (a text or a thunk; default: the
        context's newest model output) without generating an answer: functions run,
        sentences are judged by `judge` (default: this session's backend). Nothing is
        inserted into the context."""
        return run_sync(
            self.avalidate(requirements, output=output, judge=judge, template_dir=template_dir)
        )

    async def avalidate(
        self,
        requirements: Sequence[str | Requirement],
        *,
        output: str | ModelOutputThunk[Any] | None = None,
        judge: Backend | None = None,
        template_dir: str | os.PathLike[str] | None = None,
    ) -> tuple[Validation, ...]:
        """`validate` from async code."""
        text = await output_text(self._ctx if output is None else output)
        judging = Judging(judge or self.backend, template_dir)
        return await validate_all(as_requirements(requirements), text, judging)

    def _sampled_turn(
        self,
        item: Item,
        requirements: tuple[Requirement, ...],
        strategy: Strategy,
        task: str,
        turn: tuple[Any, ...],
    ) -> ModelOutputThunk[Any]:
        """The turn's output, whose attempts are branches of this session; `turn` is
        what each attempt's `_turn` gets after its item (tool_choice, format, ...)."""
        before = self._ctx
        judge = getattr(strategy, "judge", None) or self.backend
        judging = Judging(judge, getattr(strategy, "template_dir", None), task)
        form = turn[1]
        if form is not None:
            requirements = (format_requirement(form.__name__, form.model_validate_json),
                            *requirements)  # fmt: skip

        def make(plan: NextAttempt) -> tuple[Any, ModelOutputThunk[Any]]:
            args = turn
            changes = {"temperature": plan.temperature, "seed": plan.seed}
            if changes := {k: v for k, v in changes.items() if v is not None}:
                args = (*turn[:2], evolve(turn[2] or self.options, **changes), *turn[3:])
            if plan.follows is None:
                branch = self._branch(before, None)
                return branch, branch._turn(item, *args)
            branch = plan.follows.session.fork()
            return branch, branch._turn(UserMessage(plan.message or ""), *args)

        sampler = Sampler(requirements, strategy, make, judging)
        choice, _, options, run_tools, limit = turn
        return self._turn(item, choice, form, options, run_tools, limit, sampler=sampler)
