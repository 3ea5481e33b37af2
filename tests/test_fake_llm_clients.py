"""The real client libraries talk to the fake model directly (not through Eonyx), each with its
helper from tests/clients.py: the fake is real enough that what they send reaches it."""

from __future__ import annotations

import asyncio
import json
import subprocess
from pathlib import Path

import pytest
from pydantic import BaseModel

from tests import clients
from tests.fake_llm import FAKE_MODEL, FakeLLM


class Weather(BaseModel):
    city: str
    degrees: int


def get_weather(city: str) -> str:
    """The weather in a city."""
    return f"sunny in {city}"


def test_langchain_bind_tools_calls_the_named_tool(fake_llm: FakeLLM):
    chat = clients.langchain_chat(fake_llm.base_url).bind_tools([get_weather])
    message = chat.invoke("use get_weather city=Paris")
    assert [(c["name"], c["args"]) for c in message.tool_calls] == [
        ("get_weather", {"city": "Paris"})
    ]
    assert message.usage_metadata["total_tokens"] > 0


def test_langchain_structured_output(fake_llm: FakeLLM):
    chat = clients.langchain_chat(fake_llm.base_url).with_structured_output(Weather)
    assert chat.invoke("city=Oslo degrees=-3") == Weather(city="Oslo", degrees=-3)


def test_pydantic_ai_output_type(fake_llm: FakeLLM):
    from pydantic_ai import Agent

    agent = Agent(clients.pydantic_ai_model(fake_llm.base_url), output_type=Weather)
    with clients.event_loop():
        result = agent.run_sync("city=Lima degrees=25")
    assert result.output == Weather(city="Lima", degrees=25)


def test_pydantic_ai_runs_a_tool_then_answers(fake_llm: FakeLLM):
    from pydantic_ai import Agent

    agent = Agent(clients.pydantic_ai_model(fake_llm.base_url), tools=[get_weather])
    with clients.event_loop():
        result = agent.run_sync("use get_weather city=Rome")
    assert result.output == "The tool said: sunny in Rome"


def test_instructor_tools_mode(fake_llm: FakeLLM):
    client = clients.instructor_client(fake_llm.base_url)
    weather = client.chat.completions.create(
        model=FAKE_MODEL,
        response_model=Weather,
        messages=[{"role": "user", "content": "city=Kyiv degrees: 12"}],
    )
    assert weather.model_dump() == {"city": "Kyiv", "degrees": 12}
    assert fake_llm.last_request.body["tool_choice"]["function"]["name"] == "Weather"


def test_openai_agents_over_chat_completions(fake_llm: FakeLLM):
    from agents import Agent, Runner, function_tool

    clients.with_tracing_off()
    agent = Agent(
        name="helper",
        model=clients.agents_chat_model(fake_llm.base_url),
        tools=[function_tool(get_weather)],
    )
    result = asyncio.run(Runner.run(agent, "use get_weather city=Cairo"))
    assert result.final_output == "The tool said: sunny in Cairo"


def test_litellm_completion(fake_llm: FakeLLM):
    clients.litellm_env()
    import litellm

    tool = {
        "type": "function",
        "function": {"name": "get_weather", "parameters": Weather.model_json_schema()},
    }
    with clients.event_loop():
        response = litellm.completion(
            **clients.litellm_args(fake_llm.base_url),
            messages=[{"role": "user", "content": "use get_weather city=Quito"}],
            tools=[tool],
        )
    [call] = response.choices[0].message.tool_calls
    assert json.loads(call.function.arguments) == {"city": "Quito", "degrees": 1}
    assert response.usage.total_tokens > 0


@pytest.mark.slow
def test_llm_cli_no_stream_and_continue(fake_llm: FakeLLM, tmp_path: Path):
    env = clients.llm_cli_env(fake_llm.base_url, tmp_path / "llm")
    command = [clients.llm_cli(), "-m", clients.LLM_MODEL_ID, "--no-stream"]
    first = subprocess.run([*command, "hi"], env=env, capture_output=True, text=True, timeout=60)
    assert (first.returncode, first.stdout.strip()) == (0, "hi"), first.stderr
    again = subprocess.run(
        [*command, "-c", "again"], env=env, capture_output=True, text=True, timeout=60
    )
    assert (again.returncode, again.stdout.strip()) == (0, "again"), again.stderr
    assert [m["content"] for m in fake_llm.last_request.messages] == ["hi", "hi", "again"]
    assert fake_llm.last_request.headers["authorization"] == f"Bearer {clients.KEY}"
