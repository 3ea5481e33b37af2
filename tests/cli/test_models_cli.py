"""`eonyx models add`: an offering's base_url is checked as the API checks it."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from cli.command import main
from shared.runtime import Runtime
from tests.cli.test_server_commands import server_env
from tests.conftest import Backend


@pytest.mark.parametrize(
    "base_url",
    ["https://llm.example/v1?api-version=2", "https://llm.example/v1#x", "ftp://llm.example/v1"],
)
def test_models_add_refuses_a_base_url_with_a_query_fragment_or_other_scheme(
    rt: Runtime, backend: Backend, base_url: str
) -> None:
    runner = CliRunner(env=server_env(rt, backend))
    added = runner.invoke(main, ["models", "add", "x", "--base-url", base_url, "--model", "m"])
    assert added.exit_code == 1
    assert "no query string or fragment" in added.output
    assert "x  m at" not in runner.invoke(main, ["models", "list"]).output

    fine = ["models", "add", "x", "--base-url", "https://llm.example/v1", "--model", "m"]
    assert runner.invoke(main, fine).exit_code == 0
    assert "x  m at https://llm.example/v1" in runner.invoke(main, ["models", "list"]).output
