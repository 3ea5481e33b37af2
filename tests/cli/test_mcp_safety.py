"""The safety filter's disguises through `eonyx mcp`'s memory tools (issue 38), over each
transport, against the live server of tests/cli/test_mcp.py (its fixture, a server of this
module's own)."""

from __future__ import annotations

import anyio
import pytest

from tests.cli.test_mcp import TRANSPORTS, Served, call, connect, text_of
from tests.cli.test_mcp import served as served  # the fixture: this module's live server
from tests.shared.safety_probes import DISGUISED, ORDINARY, SPLIT

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_disguised_and_split_secrets_are_refused_and_ordinary_text_saved(
    served: Served,
    transport: str,
) -> None:
    _, first, second, _ = SPLIT[0]
    first = f"({transport}) {first}"
    ordinary = [f"({transport}) {text}" for text in ORDINARY[:5]]

    async def scenario() -> None:
        async with connect(served, transport, served.full_key) as session:
            for what, secret, rule in DISGUISED:
                refused = await call(session, "memory_add", kind="agent", content=secret)
                assert refused.is_error, what
                assert text_of(refused).startswith(
                    f"Refused: blocked by the safety filter (rule {rule}): "
                ), what
            added = await call(session, "memory_add", kind="agent", content=first)
            assert not added.is_error, text_of(added)
            split = await call(session, "memory_add", kind="agent", content=second)
            assert split.is_error
            assert text_of(split).startswith(
                "Refused: blocked by the safety filter (rule github_token, across entries): "
            )
            for text in ordinary:
                saved = await call(session, "memory_add", kind="agent", content=text)
                assert not saved.is_error, text_of(saved)

    anyio.run(scenario)
    memory = served.api("GET", "/memory/agent", served.alice.token)["content"]
    assert f"- {first}\n" in memory
    assert second not in memory
    assert all(f"- {text}\n" in memory for text in ordinary)
    assert not any(secret in memory for _, secret, _ in DISGUISED)
