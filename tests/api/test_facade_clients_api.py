"""Real client libraries, unchanged but for their base URL and key, against Eonyx's /v1 served
on loopback. The model behind it (tests/fake_llm.py) calls the tool a message names and
answers in the schema it is given, so each pass means what the library sent reached it."""

from __future__ import annotations

import asyncio
import json
import subprocess
from pathlib import Path

import pytest
from pydantic import BaseModel
from sqlalchemy import func, select

from shared.db.orm import ApiResponse
from tests import clients
from tests.api.conftest import Facade


class Weather(BaseModel):
    city: str
    degrees: int


def get_weather(city: str) -> str:
    """The weather in a city."""
    return f"sunny in {city}"


def base_url(facade: Facade) -> str:
    return facade.url + "/v1"


def one_session(facade: Facade) -> list[str]:
    """The roles of the facade user's one listed session."""
    [row] = facade.sessions()
    return [role for role, _ in facade.transcript(row["id"])]


def test_openai_parse_with_a_pydantic_model(facade: Facade) -> None:
    client = facade.client()
    completion = client.chat.completions.parse(
        model="default",
        messages=[{"role": "user", "content": "city=Oslo degrees=-3"}],
        response_format=Weather,
    )
    assert completion.choices[0].message.parsed == Weather(city="Oslo", degrees=-3)
    sent = facade.llm.completions[-1].body["response_format"]
    assert sent["type"] == "json_schema"
    assert sent["json_schema"]["name"] == "Weather"
    assert completion.usage is not None
    assert completion.usage.total_tokens > 0


def test_langchain_bind_tools_round_trip_and_usage(facade: Facade) -> None:
    from langchain_core.messages import HumanMessage, ToolMessage

    chat = clients.langchain_chat(base_url(facade), facade.user.token, model="default")
    with_tools = chat.bind_tools([get_weather])
    question = HumanMessage("use get_weather city=Paris")
    call = with_tools.invoke([question])
    assert [(c["name"], c["args"]) for c in call.tool_calls] == [("get_weather", {"city": "Paris"})]
    assert call.usage_metadata is not None
    assert call.usage_metadata["total_tokens"] > 0
    result = ToolMessage(get_weather("Paris"), tool_call_id=call.tool_calls[0]["id"])
    answer = with_tools.invoke([question, call, result])
    assert answer.content == "The tool said: sunny in Paris"
    assert one_session(facade) == ["user", "assistant", "tool", "assistant"]


def test_langchain_with_structured_output(facade: Facade) -> None:
    chat = clients.langchain_chat(base_url(facade), facade.user.token, model="default")
    weather = chat.with_structured_output(Weather).invoke("city=Rome degrees=31")
    assert weather == Weather(city="Rome", degrees=31)


def test_pydantic_ai_output_type(facade: Facade) -> None:
    from pydantic_ai import Agent

    agent = Agent(
        clients.pydantic_ai_model(base_url(facade), facade.user.token, "default"),
        output_type=Weather,
    )
    with clients.event_loop():
        result = agent.run_sync("city=Lima degrees=25")
    assert result.output == Weather(city="Lima", degrees=25)
    assert result.usage.total_tokens > 0


def test_pydantic_ai_runs_its_tool_in_one_session(facade: Facade) -> None:
    from pydantic_ai import Agent

    model = clients.pydantic_ai_model(base_url(facade), facade.user.token, "default")
    agent = Agent(model, tools=[get_weather])
    with clients.event_loop():
        result = agent.run_sync("use get_weather city=Bern")
    assert result.output == "The tool said: sunny in Bern"
    assert one_session(facade) == ["user", "assistant", "tool", "assistant"]


def test_instructor_tools_mode(facade: Facade) -> None:
    client = clients.instructor_client(base_url(facade), facade.user.token)
    weather = client.chat.completions.create(
        model="default",
        response_model=Weather,
        messages=[{"role": "user", "content": "city=Kyiv degrees: 12"}],
    )
    assert weather.model_dump() == {"city": "Kyiv", "degrees": 12}
    body = facade.llm.completions[-1].body
    assert body["tool_choice"] == {"type": "function", "function": {"name": "Weather"}}


def test_openai_agents_with_its_default_responses_api(facade: Facade) -> None:
    from agents import Agent, Runner, function_tool, set_default_openai_client

    clients.with_tracing_off()
    set_default_openai_client(
        clients.async_openai_client(base_url(facade), facade.user.token), use_for_tracing=False
    )
    agent = Agent(name="helper", model="default", tools=[function_tool(get_weather)])
    result = asyncio.run(Runner.run(agent, "use get_weather city=Cairo"))
    assert result.final_output == "The tool said: sunny in Cairo"
    with facade.rt.db.session() as db:  # it spoke the Responses API: two responses kept
        assert db.scalar(select(func.count()).select_from(ApiResponse)) == 2
    usage = result.context_wrapper.usage
    assert usage.requests == 2
    assert usage.input_tokens > 0
    assert usage.output_tokens > 0
    assert one_session(facade) == ["user", "assistant", "tool", "assistant"]


def test_litellm_counts_tokens(facade: Facade) -> None:
    clients.litellm_env()
    import litellm

    with clients.event_loop():
        response = litellm.completion(
            **clients.litellm_args(base_url(facade), facade.user.token, "default"),
            messages=[{"role": "user", "content": "Count my tokens."}],
        )
    assert response.choices[0].message.content == "Count my tokens."
    assert response.usage.prompt_tokens > 0
    assert response.usage.completion_tokens > 0


@pytest.mark.slow
def test_llm_cli_no_stream_and_continue(facade: Facade, tmp_path: Path) -> None:
    env = clients.llm_cli_env(base_url(facade), tmp_path / "llm", facade.user.token, "default")
    command = [clients.llm_cli(), "-m", clients.LLM_MODEL_ID, "--no-stream"]
    first = subprocess.run([*command, "hi"], env=env, capture_output=True, text=True, timeout=60)
    assert (first.returncode, first.stdout.strip()) == (0, "hi"), first.stderr
    again = subprocess.run(
        [*command, "-c", "again"], env=env, capture_output=True, text=True, timeout=60
    )
    assert (again.returncode, again.stdout.strip()) == (0, "again"), again.stderr
    assert one_session(facade) == ["user", "assistant", "user", "assistant"]
    logs = subprocess.run(
        [clients.llm_cli(), "logs", "--json", "-n", "1"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    [entry] = json.loads(logs.stdout)
    assert entry["input_tokens"]
    assert entry["output_tokens"]
