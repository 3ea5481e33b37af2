"""The OpenAPI document matches the server: schemathesis, every phase and every check that
judges the API, against a served app on each backend, finds no 5xx and no mismatch.

Kept short here: per backend, PHASE_SECONDS of the examples, coverage and fuzzing phases,
then STATEFUL_SECONDS of the stateful phase (its own run, so a slow machine cannot squeeze
it out). bench/fuzz_api.py runs it for as long as you like and prints the figures."""

from __future__ import annotations

from pathlib import Path

import pytest
import schemathesis
from schemathesis.config import SchemathesisConfig

from api.app import create_app
from tests.conftest import Backend, make_settings
from tests.fake_botframework import FakeBotFramework, fake_botframework
from tests.fake_llm import FakeLLM
from tests.openapi_fuzz import (
    CHECKS,
    CONFIG,
    known_cases,
    replay_known_cases,
    run_schemathesis,
    served,
)

__all__ = ["fake_botframework"]

PHASE_SECONDS = 15
STATEFUL_SECONDS = 10
SEED = 20260705  # failures reproduce with the same seed (the machine's speed sets how far it gets)


def fuzz_settings(data_dir: Path, backend: Backend | None, model_url: str, **env: str):  # type: ignore[no-untyped-def]
    return make_settings(
        data_dir,
        backend,
        **env,
        EONYX_LLM_BASE_URL=model_url,
        EONYX_LLM_MODEL="fake-model",
        EONYX_LLM_CONTEXT_WINDOW="100000",
        LLM_MAX_RETRIES="0",
        LLM_CONNECT_TIMEOUT_SECONDS="2",
        LLM_READ_TIMEOUT_SECONDS="10",
        # Schemathesis sends hundreds of requests a minute with one token: it checks the
        # schema, not the limits (tests/api/test_operations_api.py does).
        RATE_LIMITS_ENABLED="false",
    )


@pytest.mark.slow
def test_schemathesis_finds_no_server_error_and_no_mismatch(
    backend: Backend, tmp_path: Path, fake_llm: FakeLLM
) -> None:
    settings = fuzz_settings(tmp_path / "data", backend, fake_llm.base_url)
    with served(settings) as target:
        for phases, seconds in (
            ("examples,coverage,fuzzing", PHASE_SECONDS),
            ("stateful", STATEFUL_SECONDS),
        ):
            report_dir = tmp_path / phases.split(",")[0]
            report_dir.mkdir()
            before = target.tally.requests
            outcome = run_schemathesis(
                target, fake_llm.base_url, report_dir, max_time=seconds, seed=SEED, phases=phases
            )
            assert not outcome.server_errors, dict(outcome.server_errors)
            assert not outcome.failures, "\n".join(outcome.failure_lines) + outcome.output[-6000:]
            assert outcome.exit_code == 0, outcome.output[-6000:]
            assert outcome.requests > before, outcome.output[-3000:]  # it reached the server


def test_the_known_cases_are_refused_in_the_json_error_shape_and_save_nothing(
    backend: Backend, tmp_path: Path, fake_llm: FakeLLM, fake_botframework: FakeBotFramework
) -> None:
    """Every request once found to answer 500 (tests/openapi_fuzz.py `known_cases`), against
    the served app as the fuzzer meets it, with the Teams endpoint on."""
    settings = fuzz_settings(
        tmp_path / "data", backend, fake_llm.base_url, **fake_botframework.settings_env
    )
    with served(settings) as target:
        ran, failures = replay_known_cases(target, sign=fake_botframework.sign)
        assert not target.tally.server_errors, dict(target.tally.server_errors)
    assert not failures, "\n".join(failures)
    assert ran == len(known_cases()) >= 30


def test_every_operation_gets_the_chosen_checks_and_a_session_read_no_use_after_free(
    tmp_path: Path,
) -> None:
    """The fuzzer's configuration as schemathesis reads it: every chosen check on for every
    operation, except use_after_free under a session (a DELETE moves it to the trash, where
    it is still read). A check named with --checks would be on everywhere."""
    app = create_app(fuzz_settings(tmp_path / "data", None, "http://127.0.0.1:9/v1"))
    document = app.test_client().get("/api/v1/openapi.json").get_json()
    config = SchemathesisConfig.from_str(CONFIG)
    schema = schemathesis.openapi.from_dict(document, config=config)
    project = config.projects.default
    for path, methods in document["paths"].items():
        for method in set(methods) & {"get", "put", "post", "patch", "delete"}:
            operation = schema[path][method.upper()]
            checks = project.checks_config_for(operation=operation, phase="stateful")
            enabled = {name for name in CHECKS if checks.get_by_name(name=name).enabled}
            in_session = path.startswith("/api/v1/sessions/{session_id}")
            assert enabled == set(CHECKS) - ({"use_after_free"} if in_session else set()), path
            assert not checks.positive_data_acceptance.enabled
