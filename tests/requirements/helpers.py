"""A scripted backend whose judge answers by rule, for checked instructions without a model."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from parlay import ScriptedBackend
from parlay.backends.scripted import Reply
from parlay.request import ChatRequest

JUDGE_OPENING = "You are checking whether an answer meets one requirement."


def is_judge(request: ChatRequest) -> bool:
    return request.messages[-1].content.startswith(JUDGE_OPENING)


def judged_answer(request: ChatRequest) -> str:
    text = request.messages[-1].content
    return text.split("<answer>\n", 1)[1].split("\n</answer>", 1)[0]


def scripted(
    answers: Iterable[Reply], judge: Callable[[str], str] = lambda answer: "yes"
) -> ScriptedBackend:
    """Answers the instruction's attempts from `answers`, in order, and each judge's
    question with `judge(answer)`."""
    replies = iter(answers)

    def reply(request: ChatRequest) -> Reply:
        if is_judge(request):
            return judge(judged_answer(request))
        return next(replies)

    return ScriptedBackend(reply)


def attempts_asked(backend: ScriptedBackend) -> list[ChatRequest]:
    return [r for r in backend.requests if not is_judge(r)]


def short(limit: int) -> Callable[[str], bool]:
    def under(text: str) -> bool:
        return len(text) <= limit

    under.__name__ = f"at_most_{limit}_characters"
    return under
