"""Asking the questions: every system on a question before the next, skipping what is done.

Question-major order keeps a run that stops early fair: all systems have answered the
same questions, save the last one. Each outcome goes to the store the moment it is
known, so a killed run loses at most the question being asked.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Generic, TypeVar

from attrs import define, frozen

from bench.bfcl.data import Question
from bench.bfcl.outcome import REQUEST_ERROR, Reply, record
from bench.bfcl.split import half_of
from bench.bfcl.store import Key, Store, config_key
from bench.bfcl.systems import System

Item = TypeVar("Item")


@frozen
class Asking(Generic[Item]):
    """How a run reads the items it asks: the question a system is shown, the id the
    outcome is stored under, and the outcome itself (store keys first)."""

    question: Callable[[Item], Question]
    id: Callable[[Item], str]
    record: Callable[..., dict[str, Any]]


QUESTIONS: Asking[Question] = Asking(lambda q: q, lambda q: q.id, record)


@define
class Progress:
    asked: int = 0
    skipped: int = 0
    seconds: float = 0.0


def key(model: str, system: System, question: Question, item_id: str = "") -> Key:
    """The store key of `system`'s outcome on `question`, or on an item made from it
    and stored under its own id (a continuation)."""
    item_id = item_id or question.id
    return model, system.name, question.category, item_id, config_key(system.config)


def outcome_of(
    question: Question, reply: Reply, where: Key, *, commit: str, tag: str
) -> dict[str, Any]:
    """The stored outcome of `reply`, under its store key `where`."""
    return record(question, reply, **store_keys(question, where, commit=commit, tag=tag))


def store_keys(question: Question, where: Key, *, commit: str, tag: str) -> dict[str, Any]:
    """The keys an outcome is stored with, first in its record."""
    model, system, _, _, config = where
    return {
        "model": model,
        "system": system,
        "config": config,
        "half": half_of(question.id),
        "commit": commit,
        "tag": tag,
    }


async def answer(system: System, question: Question) -> Reply:
    """The system's reply; an exception escaping it is a failed request, kept as such."""
    try:
        return await system.answer(question)
    except Exception as exc:
        return Reply(error=f"{type(exc).__name__} in {system.name}: {exc}")


async def run(
    model: str,
    systems: Sequence[System],
    items: Sequence[Item],
    store: Store,
    *,
    asking: Asking[Item],
    commit: str = "",
    retry_errors: bool = False,
    report: Callable[[str], None] = print,
) -> Progress:
    """Ask each item of each system once, unless the store already has the outcome."""
    done = store.load()
    progress = Progress()
    for number, item in enumerate(items, 1):
        question, item_id = asking.question(item), asking.id(item)
        for system in systems:
            where = key(model, system, question, item_id)
            again = retry_errors and done.get(where, {}).get("error_type") == REQUEST_ERROR
            if where in done and not again:
                progress.skipped += 1
                continue
            reply = await answer(system, question)
            tag = system.config.get("tag", "")
            keys = store_keys(question, where, commit=commit, tag=tag)
            outcome = asking.record(item, reply, **keys)
            store.append(outcome)
            done[where] = outcome
            progress.asked += 1
            progress.seconds += reply.seconds
            mark = "ok" if outcome["right"] else "--"
            report(
                f"  [{model} / {system.name}] {number}/{len(items)} {mark} {item_id} "
                f"{reply.seconds:.1f}s {len(reply.calls)} calls {outcome.get('error_type', '')}"
            )
    return progress
