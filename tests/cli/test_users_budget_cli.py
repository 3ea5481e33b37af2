"""`eonyx users budget` (issue 38, item 4): a user's tokens this month and their budget, set
to a number, to none (0) or back to the deployment's default."""

from __future__ import annotations

from click.testing import CliRunner

from cli.command import main
from shared.runtime import Runtime
from tests.cli.test_server_commands import server_env
from tests.conftest import Account, Backend


def test_users_budget_shows_and_sets_a_users_budget(
    rt: Runtime, backend: Backend, alice: Account
) -> None:
    rt.usage.record(alice.user_id, "default", "chat", 100, 20)
    rt.usage.record(alice.user_id, "default", "session_title", 30, 3)
    runner = CliRunner(env=server_env(rt, backend) | {"MONTHLY_TOKEN_BUDGET": "500"})
    month = rt.usage.clock.now().strftime("%Y-%m")

    shown = runner.invoke(main, ["users", "budget", "alice"])
    assert shown.exit_code == 0, shown.output
    assert f"153 tokens in {month} of a budget of 500" in shown.output
    assert "default chat: 1 calls, 100 prompt + 20 completion" in shown.output
    assert "default session_title: 1 calls, 30 prompt + 3 completion" in shown.output

    assert (
        "of a budget of 150 (budget set)"
        in runner.invoke(main, ["users", "budget", "alice", "150"]).output
    )
    assert rt.usage.budget(alice.user_id, fresh=True).exceeded
    assert (
        ", no budget (budget set)"
        in runner.invoke(main, ["users", "budget", alice.user_id, "0"]).output
    )
    assert not rt.usage.budget(alice.user_id, fresh=True).exceeded
    assert (
        "of a budget of 500 (budget set)"
        in runner.invoke(main, ["users", "budget", "alice", "default"]).output
    )

    refused = runner.invoke(main, ["users", "budget", "alice", "lots"])
    assert refused.exit_code == 2
    assert "a number of tokens, 0, or default" in refused.output
