from __future__ import annotations

from pathlib import Path

import pytest

from shared.core.settings import MIB, SettingsError, load_settings


def test_defaults_follow_the_spec() -> None:
    settings = load_settings({"HOME": "/home/u"})
    assert settings.data_dir == Path("/home/u/.local/share/eonyx")
    assert settings.database_url == "sqlite:////home/u/.local/share/eonyx/eonyx.db"
    assert settings.redis_url is None
    assert settings.user_profile_enabled is True
    assert settings.user_char_limit == 1375
    assert settings.agent_memory_enabled is True
    assert settings.memory_char_limit == 2200
    assert settings.user_memory_extraction is False
    assert settings.user_memory_extraction_every_n_turns == 4
    assert settings.session_title_mode is None  # by the session's source
    assert settings.session_import_max_bytes == 25 * MIB
    assert settings.demo_mode is False


def test_xdg_data_home_moves_the_data_dir() -> None:
    settings = load_settings({"HOME": "/home/u", "XDG_DATA_HOME": "/srv/xdg"})
    assert settings.data_dir == Path("/srv/xdg/eonyx")


def test_values_are_read() -> None:
    settings = load_settings(
        {
            "DATA_DIR": "/data",
            "USER_MEMORY_EXTRACTION": "yes",
            "USER_CHAR_LIMIT": "2000",
            "SESSION_TITLE_MODE": "LLM",
            "REDIS_URL": "redis://redis:6379/0",
            "PROJECTS_DIR": "/projects",
        }
    )
    assert settings.data_dir == Path("/data")
    assert settings.user_memory_extraction is True
    assert settings.user_char_limit == 2000
    assert settings.session_title_mode == "llm"
    assert settings.redis_url == "redis://redis:6379/0"
    assert settings.projects_dir == Path("/projects")


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("USER_CHAR_LIMIT", "lots"),
        ("MEMORY_CHAR_LIMIT", "0"),
        ("USER_PROFILE_ENABLED", "maybe"),
        ("SESSION_TITLE_MODE", "poem"),
        ("DATA_DIR", "relative/path"),
        ("REDIS_URL", "localhost:6379"),
        ("DATABASE_URL", "eonyx.db"),
        ("USER_MEMORY_EXTRACTION_EVERY_N_TURNS", "-1"),
        ("EONYX_LLM_BASE_URL", "https://llm.example/v1?api-version=2"),  # before the path
        ("EONYX_LLM_BASE_URL", "https://llm.example/v1#x"),
    ],
)
def test_an_invalid_value_names_the_variable(name: str, value: str) -> None:
    with pytest.raises(SettingsError, match=name):
        load_settings({"HOME": "/home/u", name: value})


def test_the_teams_endpoint_needs_its_secret_with_its_app_id() -> None:
    off = load_settings({"HOME": "/nonexistent"})
    assert off.teams_app_id is None
    assert off.teams_auto_provision is False
    assert off.teams_openid_metadata_url.startswith("https://login.botframework.com/")
    with pytest.raises(SettingsError, match="TEAMS_APP_PASSWORD must be set"):
        load_settings({"HOME": "/nonexistent", "TEAMS_APP_ID": "6a1c3f0e"})
    with pytest.raises(SettingsError, match="TEAMS_TOKEN_URL must be an http"):
        load_settings({"HOME": "/nonexistent", "TEAMS_TOKEN_URL": "login.example/token"})
    env = {"HOME": "/x", "TEAMS_APP_ID": "6a1c3f0e", "TEAMS_APP_PASSWORD": "bot-secret-value"}
    assert "bot-secret-value" not in repr(load_settings(env))  # settings get logged


def test_facade_cors_origins_are_star_or_a_list_of_origins() -> None:
    assert load_settings({"HOME": "/nonexistent"}).facade_cors_origins == "*"
    listed = load_settings(
        {
            "HOME": "/nonexistent",
            "FACADE_CORS_ORIGINS": "https://App.example.com/, http://localhost:3000",
        }
    )
    assert listed.facade_cors_origins == "https://app.example.com,http://localhost:3000"
    for bad in ("app.example.com", "https://app.example.com/path", "*, https://a.example"):
        with pytest.raises(SettingsError, match="FACADE_CORS_ORIGINS"):
            load_settings({"HOME": "/nonexistent", "FACADE_CORS_ORIGINS": bad})
