"""The official `openai` and `anthropic` SDKs, unmodified, doing the note task through
`parlay serve` in both modes, streaming and not: chat completions, the Responses API and
Anthropic Messages."""

from __future__ import annotations

import client_runs
import pytest
from client_harness import Proxy
from client_task import PROMPT, NoteTask

STREAM = pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])


@STREAM
def test_openai_chat_completions(proxy: Proxy, task: NoteTask, stream: bool) -> None:
    task.check(client_runs.openai_chat(proxy.url, proxy.key, task, PROMPT, stream))


@STREAM
def test_openai_responses(proxy: Proxy, task: NoteTask, stream: bool) -> None:
    task.check(client_runs.openai_responses(proxy.url, proxy.key, task, PROMPT, stream))


@STREAM
def test_anthropic_messages(proxy: Proxy, task: NoteTask, stream: bool) -> None:
    task.check(client_runs.anthropic_messages(proxy.url, proxy.key, task, PROMPT, stream))
