"""Components: context items that render to chat messages through Jinja2 templates."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping, Sequence
from typing import Any

from attrs import field, frozen
from pydantic import BaseModel

from parlay.messages import Message, UserMessage
from parlay.templating import render


def describe_object(obj: Any) -> str:
    """Text for an object shown to a model: strings as they are, structures as JSON."""
    if isinstance(obj, str):
        return obj
    if isinstance(obj, BaseModel):
        return obj.model_dump_json(indent=2)
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return json.dumps(dataclasses.asdict(obj), indent=2, ensure_ascii=False, default=str)
    try:
        return json.dumps(obj, indent=2, ensure_ascii=False)
    except (TypeError, ValueError):
        return repr(obj)


def _mapping(value: Mapping[str, Any] | None) -> dict[str, Any]:
    return dict(value or {})


@frozen
class Instruction:
    """A user turn rendered from a template (`components/<template>.j2`).

    `variables` are passed to the template; the rendered text is what the model sees.
    `template_dir`: a folder searched before parlay's own. The template renders in a
    sandbox, and a context loaded from a file keeps a folder only where the caller
    allows it (`parlay.template_folders`).
    """

    template: str
    variables: dict[str, Any] = field(factory=dict, converter=_mapping, hash=False)
    template_dir: str | None = None

    @property
    def text(self) -> str:
        return render(f"components/{self.template}.j2", self.template_dir, **self.variables)

    def as_messages(self) -> tuple[Message, ...]:
        return (UserMessage(self.text),)

    @classmethod
    def instruct(
        cls,
        description: str,
        *,
        requirements: Sequence[str] = (),
        grounding: Mapping[str, Any] | None = None,
        examples: Sequence[str] = (),
    ) -> Instruction:
        return cls(
            "instruction",
            {
                "description": description,
                "requirements": list(requirements),
                "grounding": {k: describe_object(v) for k, v in (grounding or {}).items()},
                "examples": list(examples),
            },
        )

    @classmethod
    def query(cls, obj: Any, question: str) -> Instruction:
        return cls("query", {"object": describe_object(obj), "question": question})

    @classmethod
    def transform(cls, obj: Any, instruction: str) -> Instruction:
        return cls("transform", {"object": describe_object(obj), "instruction": instruction})
