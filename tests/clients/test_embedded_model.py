"""One round trip on the embedded model through each Python client: `parlay serve` with no
upstream (SmolLM2 behind the engine), a weather question, the client's own loop runs the
tool and sends its result back. Asserted: the tool was called for the city asked about,
and its result is in the answer (never the model's wording)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import client_runs
import pytest
from client_harness import Proxy, clean_env, serve
from client_runs import ToolKit

pytestmark = pytest.mark.model

PROMPT = "What is the weather in Paris?"
WEATHER = {
    "name": "get_weather",
    "description": "Current weather for a city.",
    "parameters": {
        "type": "object",
        "properties": {"city": {"type": "string", "description": "The city."}},
        "required": ["city"],
    },
}


class Weather(ToolKit):
    def __init__(self) -> None:
        super().__init__([self.get_weather], [WEATHER])
        self.asked: list[str] = []

    def get_weather(self, city: str) -> str:
        """Current weather for a city.

        Args:
            city: The city.
        """
        self.asked.append(city)
        return "Sunny, 21 C"

    def check(self, answer: str) -> None:
        assert self.asked and "paris" in self.asked[0].lower(), self.asked
        assert "21" in answer, answer


@pytest.fixture(scope="module")
def embedded() -> Iterator[Proxy]:
    proc, proxy = serve(None, "prompted")
    yield proxy
    proc.terminate()
    proc.wait(30)


def agents_model(proxy: Proxy, kind: str) -> Any:
    import agents
    from openai import AsyncOpenAI

    client = AsyncOpenAI(base_url=proxy.url + "/v1", api_key=proxy.key, timeout=300)
    if kind == "responses":
        return agents.OpenAIResponsesModel(model="parlay", openai_client=client)
    return agents.OpenAIChatCompletionsModel(model="parlay", openai_client=client)


RUNS = {
    "openai-chat": lambda p, k: client_runs.openai_chat(p.url, p.key, k, PROMPT, False),
    "openai-responses": lambda p, k: client_runs.openai_responses(p.url, p.key, k, PROMPT, False),
    "anthropic": lambda p, k: client_runs.anthropic_messages(p.url, p.key, k, PROMPT, False),
    "openai-agents-chat": lambda p, k: client_runs.openai_agent(
        agents_model(p, "chat"), k, PROMPT, False
    ),
    "openai-agents-responses": lambda p, k: client_runs.openai_agent(
        agents_model(p, "responses"), k, PROMPT, False
    ),
    "pydantic-ai": lambda p, k: client_runs.pydantic_ai(p.url, p.key, k, PROMPT, False),
    "langchain-openai": lambda p, k: client_runs.langchain(
        client_runs.langchain_chat("chat", p.url, p.key), k, k.openai_tools(), PROMPT, False
    ),
    "langchain-responses": lambda p, k: client_runs.langchain(
        client_runs.langchain_chat("responses", p.url, p.key), k, k.openai_tools(), PROMPT, False
    ),
    "langchain-anthropic": lambda p, k: client_runs.langchain(
        client_runs.langchain_chat("anthropic", p.url, p.key), k, k.anthropic_tools(), PROMPT,
        False,
    ),
}  # fmt: skip


@pytest.mark.parametrize("client", list(RUNS))
def test_round_trip_on_the_embedded_model(embedded: Proxy, client: str) -> None:
    weather = Weather()
    weather.check(RUNS[client](embedded, weather))


LLM_TOOL = '''
def get_weather(city: str) -> str:
    """Current weather for a city."""
    return "Sunny, 21 C"
'''


def test_llm_round_trip_on_the_embedded_model(embedded: Proxy, tmp_path: Path) -> None:
    config = tmp_path / "llm"
    config.mkdir()
    (config / "extra-openai-models.yaml").write_text(
        f"- model_id: parlay\n  model_name: parlay\n  api_base: {embedded.url}/v1\n"
        "  api_key_name: parlay\n  supports_tools: true\n"
    )
    (config / "keys.json").write_text(json.dumps({"parlay": embedded.key}))
    (tmp_path / "tools.py").write_text(LLM_TOOL)
    llm = Path(sys.executable).with_name("llm")
    env = {**clean_env(tmp_path), "LLM_USER_PATH": str(config), "LLM_LOAD_PLUGINS": ""}
    done = subprocess.run(
        [str(llm), "-m", "parlay", "--functions", "tools.py", "--td", "--no-stream", PROMPT],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300,
        stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    # --td shows each tool call and its result: the tool ran, and the answer used it.
    assert "get_weather" in done.stdout + done.stderr
    assert "21" in done.stdout
