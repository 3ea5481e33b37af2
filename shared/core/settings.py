"""One settings object, read from the environment once, with the spec's defaults.

`load_settings()` is called by entry points (the CLI, the WSGI module, the Celery module);
everything else receives a `Settings`. Tests build their own with `load_settings({...})`.
An invalid value raises `SettingsError` naming the variable, which stops start-up.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import MISSING, dataclass, field, fields, replace
from pathlib import Path
from typing import Any

MIB = 1024 * 1024
MIN_SECRET_CHARS = 16
TRUE_WORDS = {"1", "true", "yes", "on"}
FALSE_WORDS = {"0", "false", "no", "off"}
TITLE_MODES = ("truncate", "llm", "sequential")
LOG_FORMATS = ("json", "text")
LOG_LEVELS = ("debug", "info", "warning", "error")
BOTFRAMEWORK_OPENID_METADATA_URL = (
    "https://login.botframework.com/v1/.well-known/openidconfiguration"
)
BOTFRAMEWORK_TOKEN_URL = "https://login.microsoftonline.com/botframework.com/oauth2/v2.0/token"


class SettingsError(ValueError):
    """A variable of the environment has a value Eonyx cannot use."""


@dataclass(frozen=True)
class Settings:
    data_dir: Path
    database_url: str
    redis_url: str | None = None
    projects_dir: Path | None = None
    user_profile_enabled: bool = True
    user_char_limit: int = 1375
    agent_memory_enabled: bool = True
    memory_char_limit: int = 2200
    user_memory_extraction: bool = False
    user_memory_extraction_every_n_turns: int = 4
    # None: by the session's source (titles.mode_for): sequential for the console clients'
    session_title_mode: str | None = None
    session_import_max_bytes: int = 25 * MIB
    session_import_max_session_bytes: int = 32 * MIB  # a bundle's conversation, unpacked
    session_import_max_record_bytes: int = 2 * MIB  # one record (line) of it
    max_image_bytes: int = 5 * MIB
    max_images_per_message: int = 8
    fetch_image_urls: bool = False
    front_end_tasks_as_chats: bool = False  # Open WebUI's title, tags... prompts as sessions
    storage_quota_bytes: int = 5 * 1024 * MIB  # per user, over DATA_DIR; 0 = no quota
    monthly_token_budget: int = 0  # per user, model tokens a month (UTC); 0 = no budget

    session_cache_bytes: int = 64 * MIB
    demo_mode: bool = False
    max_request_bytes: int = 1 * MIB
    login_token_ttl_hours: int = 24 * 30
    web_session_ttl_hours: int = 24 * 14
    invite_ttl_hours: int = 24 * 7  # how long an invite link (POST /invites) stays usable
    empty_session_grace_seconds: int = 3600
    empty_sessions_per_user: int = 50  # sessions with no message a user may hold; 0 = no cap
    llm_base_url: str | None = None
    llm_model: str | None = None
    llm_context_window: int | None = None
    llm_api_key: str | None = field(default=None, repr=False)
    llm_connect_timeout: float = 10.0
    llm_read_timeout: float = 120.0
    llm_max_retries: int = 3
    max_tool_rounds: int = 8
    teams_app_id: str | None = None
    teams_app_password: str | None = field(default=None, repr=False)
    teams_tenant_id: str | None = None
    teams_openid_metadata_url: str = BOTFRAMEWORK_OPENID_METADATA_URL
    teams_token_url: str = BOTFRAMEWORK_TOKEN_URL
    teams_auto_provision: bool = False
    # Single sign-on (shared.integrations.oidc): on when OIDC_ISSUER is set.
    public_url: str | None = None  # the server's external URL, as browsers reach it
    oidc_issuer: str | None = None
    oidc_client_id: str | None = None
    oidc_client_secret: str | None = field(default=None, repr=False)
    oidc_admin_group: str | None = None
    oidc_auto_provision: bool = True
    oidc_provider_name: str | None = None
    password_sign_in: bool = True  # false: POST /auth/session and /auth/login answer 403
    log_format: str = "json"
    log_level: str = "info"
    metrics_token: str | None = field(default=None, repr=False)
    metrics_port: int | None = None
    prometheus_multiproc_dir: Path | None = None
    otel_exporter_otlp_endpoint: str | None = None
    otel_service_name: str | None = None
    rate_limits_enabled: bool = True
    rate_limit_requests_per_minute: int = 1200
    rate_limit_turns_per_minute: int = 120
    api_keys_per_user: int = 50  # live API keys a user may hold at once
    events_sockets_per_user: int = 32  # open events sockets, across every replica
    events_sockets_per_token: int = 16  # (a browser's tabs share one sign-in's token)
    request_body_seconds: int = 30  # to receive a request's body (more for a large one)
    facade_cors_origins: str = "*"  # "*" or origins joined by commas (see _origins)
    job_visibility_timeout: int = 120  # seconds before a dead worker's job goes to another
    mcp_sessions_per_key: int = 16  # `eonyx mcp --http`: open MCP sessions per API key
    mcp_key_check_seconds: float = 30.0  # ... and how long a key the API accepted is trusted

    def with_changes(self, **changes: object) -> Settings:
        return replace(self, **changes)  # type: ignore[arg-type]


def _bool(env: Mapping[str, str], name: str, default: bool) -> bool:
    raw = env.get(name)
    if raw is None or raw.strip() == "":
        return default
    word = raw.strip().lower()
    if word in TRUE_WORDS:
        return True
    if word in FALSE_WORDS:
        return False
    raise SettingsError(f"{name} must be true or false, got {raw!r}")


def _int(env: Mapping[str, str], name: str, default: int, minimum: int = 1) -> int:
    raw = env.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        value = int(raw.strip())
    except ValueError:
        raise SettingsError(f"{name} must be a whole number, got {raw!r}") from None
    if value < minimum:
        raise SettingsError(f"{name} must be at least {minimum}, got {value}")
    return value


def _seconds(env: Mapping[str, str], name: str, default: float) -> float:
    raw = env.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        value = float(raw.strip())
    except ValueError:
        raise SettingsError(f"{name} must be a number of seconds, got {raw!r}") from None
    if value <= 0:
        raise SettingsError(f"{name} must be more than 0, got {value}")
    return value


def _choice(env: Mapping[str, str], name: str, default: str, choices: tuple[str, ...]) -> str:
    raw = (env.get(name) or "").strip().lower() or default
    if raw not in choices:
        raise SettingsError(f"{name} must be one of {', '.join(choices)}, got {raw!r}")
    return raw


def _path(env: Mapping[str, str], name: str) -> Path | None:
    raw = (env.get(name) or "").strip()
    if not raw:
        return None
    path = Path(raw).expanduser()
    if not path.is_absolute():
        raise SettingsError(f"{name} must be an absolute path, got {raw!r}")
    return path


def _url(env: Mapping[str, str], name: str) -> str | None:
    raw = (env.get(name) or "").strip()
    if raw and not raw.startswith(("http://", "https://")):
        raise SettingsError(f"{name} must be an http(s) URL, got {raw!r}")
    return raw.rstrip("/") or None


def _base_url(env: Mapping[str, str], name: str) -> str | None:
    """A model's base URL: the client appends /chat/completions, so a query string or a
    fragment would end up before it."""
    url = _url(env, name)
    if url and ("?" in url or "#" in url):
        raise SettingsError(
            f"{name} must be an http(s) URL without a query string or fragment, got {url!r}"
        )
    return url


def _url_or_default(env: Mapping[str, str], name: str, default: str) -> str:
    return _url(env, name) or default


def default_data_dir(env: Mapping[str, str]) -> Path:
    base = (env.get("XDG_DATA_HOME") or "").strip()
    root = Path(base) if base else Path(env.get("HOME") or Path.home()) / ".local" / "share"
    return root / "eonyx"


def _text(env: Mapping[str, str], name: str, default: str | None) -> str | None:
    return (env.get(name) or "").strip() or default


def _optional_int(env: Mapping[str, str], name: str, default: int | None) -> int | None:
    return _int(env, name, default or 0, minimum=0) or None


def _token(env: Mapping[str, str], name: str, default: str | None) -> str | None:
    """A bearer secret: long enough not to be guessed, one printable word."""
    raw = (env.get(name) or "").strip()
    if not raw:
        return default
    if len(raw) < MIN_SECRET_CHARS or not raw.isprintable() or " " in raw:
        raise SettingsError(
            f"{name} must be at least {MIN_SECRET_CHARS} printable characters without spaces"
        )
    return raw


def _port(env: Mapping[str, str], name: str, default: int | None) -> int | None:
    value = _int(env, name, default or 0, minimum=0) or None
    if value is not None and value > 65535:
        raise SettingsError(f"{name} must be a TCP port (1-65535), got {value}")
    return value


def _origins(env: Mapping[str, str], name: str, default: str) -> str:
    """`*`, or web origins (`https://app.example.com`, a port if not the scheme's own)
    separated by commas: what browsers send in `Origin`, lower-cased, joined by commas."""
    raw = (env.get(name) or "").strip()
    if not raw:
        return default
    origins = [item.strip().lower().rstrip("/") for item in raw.split(",") if item.strip()]
    if origins == ["*"]:
        return "*"
    for origin in origins:
        scheme, _, host = origin.partition("://")
        if scheme not in ("http", "https") or not host or any(c in host for c in "/?#* "):
            raise SettingsError(
                f"{name} must be * or origins such as https://app.example.com separated by "
                f"commas, got {origin!r}"
            )
    return ",".join(origins)


def _defaults() -> dict[str, object]:
    return {f.name: f.default for f in fields(Settings) if f.default is not MISSING}


Parser = Callable[[Mapping[str, str], str, Any], Any]

# Environment variable -> (Settings field, parser). Every default lives on the dataclass
# above and is read from there, so it is written once (and the README is checked against it).
VARIABLES: dict[str, tuple[str, Parser]] = {
    "PROJECTS_DIR": ("projects_dir", lambda env, name, _default: _path(env, name)),
    "USER_PROFILE_ENABLED": ("user_profile_enabled", _bool),
    "USER_CHAR_LIMIT": ("user_char_limit", _int),
    "AGENT_MEMORY_ENABLED": ("agent_memory_enabled", _bool),
    "MEMORY_CHAR_LIMIT": ("memory_char_limit", _int),
    "USER_MEMORY_EXTRACTION": ("user_memory_extraction", _bool),
    "USER_MEMORY_EXTRACTION_EVERY_N_TURNS": ("user_memory_extraction_every_n_turns", _int),
    "SESSION_TITLE_MODE": (
        "session_title_mode",
        lambda env, name, _default: _choice(env, name, "", ("", *TITLE_MODES)) or None,
    ),
    "SESSION_IMPORT_MAX_BYTES": ("session_import_max_bytes", _int),
    "SESSION_IMPORT_MAX_SESSION_BYTES": ("session_import_max_session_bytes", _int),
    "SESSION_IMPORT_MAX_RECORD_BYTES": ("session_import_max_record_bytes", _int),
    "MAX_IMAGE_BYTES": ("max_image_bytes", _int),
    "MAX_IMAGES_PER_MESSAGE": ("max_images_per_message", _int),
    "FETCH_IMAGE_URLS": ("fetch_image_urls", _bool),
    "FRONT_END_TASKS_AS_CHATS": ("front_end_tasks_as_chats", _bool),
    "STORAGE_QUOTA_BYTES": (
        "storage_quota_bytes",
        lambda env, name, default: _int(env, name, default, minimum=0),
    ),
    "MONTHLY_TOKEN_BUDGET": (
        "monthly_token_budget",
        lambda env, name, default: _int(env, name, default, minimum=0),
    ),
    "SESSION_CACHE_BYTES": (
        "session_cache_bytes",
        lambda env, name, default: _int(env, name, default, minimum=0),
    ),
    "DEMO_MODE": ("demo_mode", _bool),
    "MAX_REQUEST_BYTES": ("max_request_bytes", _int),
    "LOGIN_TOKEN_TTL_HOURS": ("login_token_ttl_hours", _int),
    "WEB_SESSION_TTL_HOURS": ("web_session_ttl_hours", _int),
    "INVITE_TTL_HOURS": ("invite_ttl_hours", _int),
    "EMPTY_SESSION_GRACE_SECONDS": (
        "empty_session_grace_seconds",
        lambda env, name, default: _int(env, name, default, minimum=0),
    ),
    "EMPTY_SESSIONS_PER_USER": (
        "empty_sessions_per_user",
        lambda env, name, default: _int(env, name, default, minimum=0),
    ),
    "EONYX_LLM_BASE_URL": ("llm_base_url", lambda env, name, _default: _base_url(env, name)),
    "EONYX_LLM_MODEL": ("llm_model", _text),
    "EONYX_LLM_CONTEXT_WINDOW": ("llm_context_window", _optional_int),
    "EONYX_LLM_API_KEY": ("llm_api_key", _text),
    "LLM_CONNECT_TIMEOUT_SECONDS": ("llm_connect_timeout", _seconds),
    "LLM_READ_TIMEOUT_SECONDS": ("llm_read_timeout", _seconds),
    "LLM_MAX_RETRIES": ("llm_max_retries", lambda env, name, d: _int(env, name, d, minimum=0)),
    "MAX_TOOL_ROUNDS": ("max_tool_rounds", _int),
    "TEAMS_APP_ID": ("teams_app_id", _text),
    "TEAMS_APP_PASSWORD": ("teams_app_password", _text),
    "TEAMS_TENANT_ID": ("teams_tenant_id", _text),
    "TEAMS_OPENID_METADATA_URL": ("teams_openid_metadata_url", _url_or_default),
    "TEAMS_TOKEN_URL": ("teams_token_url", _url_or_default),
    "TEAMS_AUTO_PROVISION": ("teams_auto_provision", _bool),
    "PUBLIC_URL": ("public_url", lambda env, name, _default: _base_url(env, name)),
    "OIDC_ISSUER": ("oidc_issuer", lambda env, name, _default: _base_url(env, name)),
    "OIDC_CLIENT_ID": ("oidc_client_id", _text),
    "OIDC_CLIENT_SECRET": ("oidc_client_secret", _text),
    "OIDC_ADMIN_GROUP": ("oidc_admin_group", _text),
    "OIDC_AUTO_PROVISION": ("oidc_auto_provision", _bool),
    "OIDC_PROVIDER_NAME": ("oidc_provider_name", _text),
    "PASSWORD_SIGN_IN": ("password_sign_in", _bool),
    "LOG_FORMAT": ("log_format", lambda env, name, d: _choice(env, name, d, LOG_FORMATS)),
    "LOG_LEVEL": ("log_level", lambda env, name, d: _choice(env, name, d, LOG_LEVELS)),
    "METRICS_TOKEN": ("metrics_token", _token),
    "METRICS_PORT": ("metrics_port", _port),
    "PROMETHEUS_MULTIPROC_DIR": (
        "prometheus_multiproc_dir",
        lambda env, name, _default: _path(env, name),
    ),
    "OTEL_EXPORTER_OTLP_ENDPOINT": (
        "otel_exporter_otlp_endpoint",
        lambda env, name, _default: _url(env, name),
    ),
    "OTEL_SERVICE_NAME": ("otel_service_name", _text),
    "RATE_LIMITS_ENABLED": ("rate_limits_enabled", _bool),
    "RATE_LIMIT_REQUESTS_PER_MINUTE": ("rate_limit_requests_per_minute", _int),
    "RATE_LIMIT_TURNS_PER_MINUTE": ("rate_limit_turns_per_minute", _int),
    "API_KEYS_PER_USER": ("api_keys_per_user", _int),
    "EVENTS_SOCKETS_PER_USER": ("events_sockets_per_user", _int),
    "EVENTS_SOCKETS_PER_TOKEN": ("events_sockets_per_token", _int),
    "REQUEST_BODY_SECONDS": ("request_body_seconds", _int),
    "FACADE_CORS_ORIGINS": ("facade_cors_origins", _origins),
    "JOB_VISIBILITY_TIMEOUT_SECONDS": ("job_visibility_timeout", _int),
    "MCP_SESSIONS_PER_KEY": ("mcp_sessions_per_key", _int),
    "MCP_KEY_CHECK_SECONDS": ("mcp_key_check_seconds", _seconds),
}


def load_settings(environ: Mapping[str, str] | None = None) -> Settings:
    """Build the settings from `environ` (the process environment by default)."""
    env = os.environ if environ is None else environ
    data_dir = _path(env, "DATA_DIR") or default_data_dir(env)
    database_url = (env.get("DATABASE_URL") or "").strip() or f"sqlite:///{data_dir / 'eonyx.db'}"
    if "://" not in database_url:
        raise SettingsError(
            f"DATABASE_URL must be a URL such as sqlite:///path, got {database_url!r}"
        )
    redis_url = (env.get("REDIS_URL") or "").strip() or None
    if redis_url and not redis_url.startswith(("redis://", "rediss://", "unix://")):
        raise SettingsError(
            f"REDIS_URL must start with redis://, rediss:// or unix://, got {redis_url!r}"
        )
    defaults = _defaults()
    values = {
        field_name: parse(env, name, defaults.get(field_name))
        for name, (field_name, parse) in VARIABLES.items()
    }
    if values["oidc_issuer"] and not (values["oidc_client_id"] and values["public_url"]):
        raise SettingsError(
            "OIDC_CLIENT_ID and PUBLIC_URL must be set when OIDC_ISSUER is (single sign-on)"
        )
    if values["teams_app_id"] and not values["teams_app_password"]:
        raise SettingsError(
            "TEAMS_APP_PASSWORD must be set when TEAMS_APP_ID is (the bot's secret)"
        )
    return Settings(data_dir=data_dir, database_url=database_url, redis_url=redis_url, **values)
