"""Real OpenAI client libraries pointed at a base URL and key: the fake model's, or Eonyx's /v1.

    chat = langchain_chat(fake_llm.base_url)              # or (f"{server}/v1", api_key=key)
    agent = pydantic_ai.Agent(pydantic_ai_model(base_url), output_type=Answer)
    with event_loop():                                    # run_sync leaves a loop open
        agent.run_sync("...")
    client = instructor_client(base_url)                  # instructor.Mode.TOOLS
    model = agents_chat_model(base_url)                   # openai-agents over Chat Completions
    with_tracing_off()                                    # before any openai-agents run
    with event_loop():                                    # after litellm_env(), import litellm
        litellm.completion(**litellm_args(base_url), messages=[...])
    env = llm_cli_env(base_url, tmp_path)                 # then: llm -m eonyx --no-stream hi
    subprocess.run([llm_cli(), "-m", LLM_MODEL_ID, "--no-stream", "hi"], env=env)

Each library is imported when its helper is called, so importing this module is cheap. None of
them reaches the network but through `base_url`: openai-agents' tracing upload is turned off by
`with_tracing_off`, litellm's model cost map is read from its package (`litellm_env`).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from tests.fake_llm import FAKE_MODEL

KEY = "sk-test"  # any key: the fake accepts every one
LLM_MODEL_ID = "eonyx"  # the `llm` CLI's name for the model its config points at


def openai_client(base_url: str, api_key: str = KEY, **options: Any) -> Any:
    import openai

    return openai.OpenAI(base_url=base_url, api_key=api_key, max_retries=0, **options)


def async_openai_client(base_url: str, api_key: str = KEY, **options: Any) -> Any:
    import openai

    return openai.AsyncOpenAI(base_url=base_url, api_key=api_key, max_retries=0, **options)


def langchain_chat(base_url: str, api_key: str = KEY, model: str = FAKE_MODEL, **options: Any):
    """A langchain-openai `ChatOpenAI` (Chat Completions; `use_responses_api` is off)."""
    from langchain_openai import ChatOpenAI

    return ChatOpenAI(base_url=base_url, api_key=api_key, model=model, max_retries=0, **options)


def pydantic_ai_model(base_url: str, api_key: str = KEY, model: str = FAKE_MODEL) -> Any:
    """A pydantic-ai `OpenAIChatModel`, for `Agent(model, output_type=...)`."""
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    return OpenAIChatModel(model, provider=OpenAIProvider(base_url=base_url, api_key=api_key))


def instructor_client(base_url: str, api_key: str = KEY, mode: Any = None) -> Any:
    """An instructor client over `openai.OpenAI` (TOOLS mode unless told otherwise); call it
    with `model=FAKE_MODEL, response_model=..., messages=[...]`."""
    import instructor

    return instructor.from_openai(
        openai_client(base_url, api_key), mode=mode or instructor.Mode.TOOLS
    )


def with_tracing_off() -> None:
    """openai-agents uploads traces to OpenAI unless told not to."""
    from agents import set_tracing_disabled

    set_tracing_disabled(True)


def agents_chat_model(base_url: str, api_key: str = KEY, model: str = FAKE_MODEL) -> Any:
    """An openai-agents model over Chat Completions (its default is the Responses API, which
    `Agent(model="...")` with `set_default_openai_client(async_openai_client(...))` uses)."""
    from agents import OpenAIChatCompletionsModel

    return OpenAIChatCompletionsModel(
        model=model, openai_client=async_openai_client(base_url, api_key)
    )


def litellm_env() -> None:
    """Set before litellm is first imported: it otherwise fetches its cost map from GitHub."""
    os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"


@contextlib.contextmanager
def event_loop() -> Iterator[None]:
    """Around the blocking calls of pydantic-ai (`Agent.run_sync`) and litellm (`completion`,
    whose service logger runs hooks on `asyncio.get_event_loop()`): both make the thread a
    current event loop that nobody closes, an unclosed-socket ResourceWarning (an error here)
    when it is collected in some later test. This sets one for them and closes it."""
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    try:
        yield
    finally:
        asyncio.set_event_loop(None)
        loop.close()


def litellm_args(base_url: str, api_key: str = KEY, model: str = FAKE_MODEL) -> dict[str, Any]:
    """Keyword arguments for `litellm.completion` (the `openai/` prefix: any compatible API)."""
    return {"model": f"openai/{model}", "api_base": base_url, "api_key": api_key}


def llm_cli() -> str:
    """The venv's `llm` executable."""
    return str(Path(sys.executable).with_name("llm"))


def llm_cli_env(
    base_url: str,
    user_dir: Path,
    api_key: str = KEY,
    model: str = FAKE_MODEL,
    headers: dict[str, str] | None = None,
) -> dict[str, str]:
    """An environment for the `llm` CLI whose model `LLM_MODEL_ID` is `model` at `base_url`.

    It writes `extra-openai-models.yaml` and `keys.json` into `user_dir` (LLM_USER_PATH, which
    also holds llm's logs.db, so `-c` continues there)."""
    user_dir.mkdir(parents=True, exist_ok=True)
    entry: dict[str, Any] = {
        "model_id": LLM_MODEL_ID,
        "model_name": model,
        "api_base": base_url,
        "api_key_name": LLM_MODEL_ID,
        "supports_tools": True,
        "supports_schema": True,
    }
    if headers:
        entry["headers"] = headers
    # YAML is a superset of JSON: no YAML writer needed.
    (user_dir / "extra-openai-models.yaml").write_text(json.dumps([entry]))
    (user_dir / "keys.json").write_text(json.dumps({LLM_MODEL_ID: api_key}))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "LLM_"))}
    return {**env, "LLM_USER_PATH": str(user_dir)}
