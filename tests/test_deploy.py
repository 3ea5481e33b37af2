"""The deployment files agree with each other and with the code they start.

No docker engine is needed: docker-compose.yml is read as YAML (with compose's `${VAR:-default}`
interpolation done for an empty environment), the Dockerfile as text, gunicorn.conf.py with
runpy. Each check is one way a stack could look fine and still not come up.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import runpy
import shlex
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import click
import pytest
import yaml
from sqlalchemy.engine import make_url

from cli.command import main as eonyx_main

ROOT = Path(__file__).resolve().parent.parent
COMPOSE = ROOT / "docker-compose.yml"
DOCKERFILE = ROOT / "deploy" / "Dockerfile"
DOCKERIGNORE = ROOT / "deploy" / "Dockerfile.dockerignore"
GUNICORN_CONF = ROOT / "deploy" / "gunicorn.conf.py"
ENV_EXAMPLE = ROOT / "deploy" / "env.example"
SETTINGS_PY = ROOT / "shared" / "core" / "settings.py"

SERVICES = {"edge", "api", "worker", "beat", "redis", "postgres"}
APP_SERVICES = ("api", "worker", "beat")
CADDYFILE = ROOT / "deploy" / "Caddyfile"
PROFILES = {
    "mcp": "mcp",
    "prometheus": "observability",
    "otel-collector": "observability",
}
PROMETHEUS_CONF = ROOT / "deploy" / "prometheus.yml"
OTEL_CONF = ROOT / "deploy" / "otel-collector.yaml"
# Settings the compose file wires itself, or that make no sense inside a container.
NOT_PASSED_THROUGH = {"DATA_DIR", "DATABASE_URL", "REDIS_URL", "HOME", "XDG_DATA_HOME"}
NOT_PASSED_THROUGH |= {"PROJECTS_DIR"}  # needs a mount chosen by the operator
# Wired per service: each container's own metrics directory, port and trace service name.
NOT_PASSED_THROUGH |= {"PROMETHEUS_MULTIPROC_DIR", "METRICS_PORT", "OTEL_SERVICE_NAME"}
# Variables compose itself reads (.env), never passed to Eonyx: documented in env.example.
COMPOSE_ONLY = {
    "POSTGRES_PASSWORD",
    "EONYX_PORT",
    "EONYX_HTTPS_PORT",
    "EONYX_WORKER_CONCURRENCY",
    "COMPOSE_PROFILES",
    "EONYX_PUBLIC_HOST",
    "PROMETHEUS_PORT",
    "PROMETHEUS_RETENTION",
    "EONYX_MCP_PORT",
}
CLIENT_ONLY = {"EONYX_URL"}  # read by the client commands, not the server


# --- helpers ---------------------------------------------------------------------------

INTERPOLATION = re.compile(
    r"\$\$|\$\{(?P<name>[A-Za-z_][A-Za-z0-9_]*)(?:(?P<op>:?[-?])(?P<arg>[^}]*))?\}"
    r"|\$(?P<bare>[A-Za-z_][A-Za-z0-9_]*)"
)


def interpolate(value: Any, env: dict[str, str]) -> Any:
    """Compose's variable substitution: `${X}`, `${X:-d}`, `${X-d}`, `${X:?err}`, `$$`."""
    if isinstance(value, dict):
        return {key: interpolate(item, env) for key, item in value.items()}
    if isinstance(value, list):
        return [interpolate(item, env) for item in value]
    if not isinstance(value, str):
        return value

    def substitute(match: re.Match[str]) -> str:
        if match.group(0) == "$$":
            return "$"
        name = match.group("name") or match.group("bare")
        op, arg = match.group("op"), match.group("arg") or ""
        current = env.get(name)
        if op in (":-", "-"):
            unset = current is None or (op == ":-" and current == "")
            return arg if unset else current  # type: ignore[return-value]
        if op in (":?", "?") and (current is None or (op == ":?" and current == "")):
            raise AssertionError(f"compose needs {name} to be set: {arg}")
        return current or ""

    return INTERPOLATION.sub(substitute, value)


@pytest.fixture(scope="module")
def raw_compose() -> dict[str, Any]:
    assert COMPOSE.is_file(), "docker-compose.yml is missing"
    return yaml.safe_load(COMPOSE.read_text())


@pytest.fixture(scope="module")
def compose(raw_compose: dict[str, Any]) -> dict[str, Any]:
    """The compose file as `docker compose up` sees it with no .env file."""
    return interpolate(raw_compose, {})


@pytest.fixture(scope="module")
def compose_services(compose: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return compose["services"]


def environment(service: dict[str, Any]) -> dict[str, str]:
    env = service.get("environment") or {}
    if isinstance(env, list):
        env = dict(item.split("=", 1) if "=" in item else (item, "") for item in env)
    return {str(key): "" if value is None else str(value) for key, value in env.items()}


def mounts(service: dict[str, Any]) -> dict[str, str]:
    """{target path: source} of a service's volumes (short or long syntax)."""
    found: dict[str, str] = {}
    for volume in service.get("volumes") or []:
        if isinstance(volume, str):
            source, target = volume.split(":")[:2]
        else:
            source, target = volume.get("source", ""), volume["target"]
        found[target] = source
    return found


def shell_commands(command: str | list[str] | None) -> list[list[str]]:
    """The programs a compose `command` (or a Dockerfile CMD) runs, each as an argv."""
    argv = shlex.split(command) if isinstance(command, str) else list(command or [])
    if not argv:
        return []
    if argv[:2] in (["sh", "-c"], ["/bin/sh", "-c"], ["bash", "-c"]):
        found = []
        for part in re.split(r"&&|\|\||;", argv[2]):
            words = shlex.split(part)
            if words and words[0] == "exec":
                words = words[1:]
            if words:
                found.append(words)
        return found
    return [argv]


def service_commands(service: dict[str, Any], image_cmd: list[str]) -> list[list[str]]:
    return shell_commands(service.get("command")) or shell_commands(image_cmd)


def dockerfile_instructions() -> list[tuple[str, str]]:
    text = re.sub(r"\\\n", " ", DOCKERFILE.read_text())
    found = []
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            keyword, _, rest = line.partition(" ")
            found.append((keyword.upper(), rest.strip()))
    return found


def final_stage() -> list[tuple[str, str]]:
    instructions = dockerfile_instructions()
    starts = [i for i, (keyword, _) in enumerate(instructions) if keyword == "FROM"]
    return instructions[starts[-1] :]


def image_cmd() -> list[str]:
    cmds = [rest for keyword, rest in final_stage() if keyword == "CMD"]
    assert len(cmds) == 1, "the final stage needs exactly one CMD"
    parsed = json.loads(cmds[0])  # exec form: signals reach gunicorn directly
    assert isinstance(parsed, list)
    return parsed


def copied_gunicorn_conf() -> str:
    """Where the image keeps deploy/gunicorn.conf.py."""
    for keyword, rest in final_stage():
        if keyword == "COPY" and not rest.startswith("--from"):
            source, target = rest.split()[-2:]
            if source == "deploy/gunicorn.conf.py":
                return target
    raise AssertionError("the image does not contain deploy/gunicorn.conf.py")


def option(argv: list[str], *names: str) -> str | None:
    for i, word in enumerate(argv):
        for name in names:
            if word == name and i + 1 < len(argv):
                return argv[i + 1]
            if name.startswith("--") and word.startswith(name + "="):
                return word.split("=", 1)[1]
    return None


def check_program(argv: list[str], data_mount: str | None = None) -> None:
    """Fail unless `argv` names a program and arguments this project really provides."""
    program = argv[0]
    if program == "eonyx":
        check_eonyx_command(argv[1:])
    elif program == "celery":
        app = option(argv, "-A", "--app")
        assert app, f"celery without -A: {argv}"
        assert importlib.util.find_spec(app) is not None, f"celery app module {app} not found"
        assert any(word in ("worker", "beat", "inspect") for word in argv), argv
        schedule = option(argv, "-s", "--schedule")
        if schedule and data_mount:
            assert schedule.startswith(data_mount + "/"), "beat's schedule must be on the volume"
    elif program == "gunicorn":
        config = option(argv, "-c", "--config")
        assert config == copied_gunicorn_conf(), f"gunicorn reads {config}, the image has another"
    elif program in ("mkdir", "test", "unset"):  # the last two: shell built-ins
        pass
    else:
        raise AssertionError(f"unexpected program in a command: {argv}")


def check_eonyx_command(args: list[str]) -> None:
    command: click.Command = eonyx_main
    path = ["eonyx"]
    while isinstance(command, click.Group) and args and args[0] in command.commands:
        path.append(args[0])
        command = command.commands[args.pop(0)]
    assert not isinstance(command, click.Group), f"`{' '.join(path)}` needs a subcommand"
    # Parses the options exactly as the command would (unknown ones raise), without running it.
    command.make_context(" ".join(path), list(args))


def settings_env_names() -> set[str]:
    from shared.core.settings import VARIABLES

    return set(VARIABLES) | {"DATA_DIR", "DATABASE_URL", "REDIS_URL", "XDG_DATA_HOME", "HOME"}


# --- the compose file ------------------------------------------------------------------


def test_the_six_services_exist(compose_services: dict[str, Any]) -> None:
    assert set(compose_services) >= SERVICES
    for name in SERVICES:
        assert not compose_services[name].get("profiles"), f"{name} must start by default"


def test_optional_services_are_in_their_profiles(compose_services: dict[str, Any]) -> None:
    """`docker compose up` starts the six; mcp and observability are asked for by name."""
    optional = set(compose_services) - SERVICES
    assert optional == set(PROFILES)
    for name, profile in PROFILES.items():
        assert compose_services[name].get("profiles") == [profile], name


def test_every_service_has_a_healthcheck(compose_services: dict[str, Any]) -> None:
    """All but the edge, whose images (the official one, Debian's stand-in) share no HTTP
    client to run one: the published port's /healthz checks it from outside."""
    for name, service in compose_services.items():
        if name == "edge":
            assert "healthcheck" not in service
            continue
        check = service.get("healthcheck")
        assert check, f"{name} has no healthcheck"
        assert not check.get("disable"), name
        test = check.get("test")
        assert test, f"{name}: healthcheck test {test!r}"
        assert test[0] in ("CMD", "CMD-SHELL"), f"{name}: healthcheck test {test!r}"


def test_healthchecks_probe_the_right_thing(compose_services: dict[str, Any]) -> None:
    api = " ".join(compose_services["api"]["healthcheck"]["test"])
    assert "/readyz" in api
    assert "127.0.0.1:8000" in api
    assert "redis-cli" in compose_services["redis"]["healthcheck"]["test"]
    assert "pg_isready" in compose_services["postgres"]["healthcheck"]["test"]
    worker = " ".join(compose_services["worker"]["healthcheck"]["test"])
    assert "inspect ping" in worker
    assert "celery@$(hostname)" in worker  # podman's exec sets no HOSTNAME
    for argv in shell_commands(compose_services["worker"]["healthcheck"]["test"][1]):
        check_program(argv)


def test_depends_on_waits_for_healthy_services(compose_services: dict[str, Any]) -> None:
    for name in APP_SERVICES:
        depends = compose_services[name].get("depends_on")
        assert isinstance(depends, dict), f"{name} must wait for redis"
        assert "redis" in depends, f"{name} must wait for redis"
        for target, rule in depends.items():
            assert target in compose_services, f"{name} depends on unknown {target}"
            assert rule.get("condition") == "service_healthy", f"{name} -> {target}"
            assert compose_services[target].get("healthcheck"), target
    assert "postgres" in compose_services["api"]["depends_on"]
    # The api is healthy only with a worker alive (/readyz), so the worker must not wait for
    # the api's health; `eonyx worker` waits for the api's migrations itself.
    assert "api" not in compose_services["worker"]["depends_on"]
    assert "postgres" in compose_services["worker"]["depends_on"]


def test_app_services_share_one_volume_at_the_data_dir(
    compose: dict[str, Any], compose_services: dict[str, Any]
) -> None:
    data_dirs = {environment(compose_services[name]).get("DATA_DIR") for name in APP_SERVICES}
    assert len(data_dirs) == 1
    assert None not in data_dirs
    data_dir = data_dirs.pop()
    sources = {mounts(compose_services[name]).get(data_dir) for name in APP_SERVICES}
    assert len(sources) == 1, f"{data_dir} mounts: {sources}"
    assert None not in sources, f"{data_dir} mounts: {sources}"
    source = sources.pop()
    assert source in (compose.get("volumes") or {}), f"{source} is not a named volume"
    postgres_data = mounts(compose_services["postgres"])
    assert postgres_data.get("/var/lib/postgresql/data") in compose["volumes"]
    assert source not in postgres_data.values()


def test_app_services_use_the_same_database_and_redis(compose_services: dict[str, Any]) -> None:
    for key in ("DATABASE_URL", "REDIS_URL"):
        values = {environment(compose_services[name]).get(key) for name in APP_SERVICES}
        assert len(values) == 1, f"{key} differs: {values}"
        assert None not in values, f"{key} differs: {values}"


def test_urls_point_at_the_compose_services(compose_services: dict[str, Any]) -> None:
    env = environment(compose_services["api"])
    database = make_url(env["DATABASE_URL"])
    assert database.drivername == "postgresql+psycopg"  # the driver pyproject installs
    assert (database.host, database.port or 5432) == ("postgres", 5432)
    assert "5432" not in " ".join(map(str, compose_services["postgres"].get("command") or []))
    redis_url = urlsplit(env["REDIS_URL"])
    assert redis_url.scheme == "redis"
    assert (redis_url.hostname, redis_url.port or 6379) == ("redis", 6379)
    assert "--port" not in (compose_services["redis"].get("command") or [])


def test_database_credentials_match_the_postgres_service(compose_services: dict[str, Any]) -> None:
    database = make_url(environment(compose_services["api"])["DATABASE_URL"])
    postgres = environment(compose_services["postgres"])
    assert database.username == postgres["POSTGRES_USER"]
    assert database.password == postgres["POSTGRES_PASSWORD"]
    assert database.database == postgres["POSTGRES_DB"]
    check = compose_services["postgres"]["healthcheck"]["test"]
    assert option(check, "-U") == postgres["POSTGRES_USER"]
    assert option(check, "-d") == postgres["POSTGRES_DB"]


def test_credentials_follow_one_password_variable(raw_compose: dict[str, Any]) -> None:
    """With POSTGRES_PASSWORD set in .env, both ends change together."""
    changed = interpolate(raw_compose, {"POSTGRES_PASSWORD": "s3cret"})["services"]
    assert make_url(environment(changed["worker"])["DATABASE_URL"]).password == "s3cret"
    assert environment(changed["postgres"])["POSTGRES_PASSWORD"] == "s3cret"


def test_exactly_one_beat(compose_services: dict[str, Any]) -> None:
    image = image_cmd()
    runs_beat = []
    for name, service in compose_services.items():
        ours = service.get("image") == compose_services["api"]["image"]
        for argv in service_commands(service, image if ours else []):
            is_celery_beat = argv[0] == "celery" and "beat" in argv
            if is_celery_beat or "--beat" in argv or "-B" in argv:
                runs_beat.append(name)
    assert runs_beat == ["beat"]
    replicas = (compose_services["beat"].get("deploy") or {}).get("replicas", 1)
    assert replicas == 1


def test_commands_name_things_that_exist(compose_services: dict[str, Any]) -> None:
    image = image_cmd()
    data_dir = environment(compose_services["api"])["DATA_DIR"]
    api = compose_services["api"]
    assert api["build"]["dockerfile"] == "deploy/Dockerfile"
    assert (ROOT / api["build"]["context"] / "deploy" / "Dockerfile").is_file()
    for name in APP_SERVICES:
        service = compose_services[name]
        argvs = service_commands(service, image)
        assert argvs, f"{name} runs nothing"
        for argv in argvs:
            check_program(argv, data_dir)
    api_programs = [
        argv[:3]
        for argv in service_commands(compose_services["api"], image)
        if argv[0] not in ("test", "unset")
    ]
    assert api_programs[0] == ["eonyx", "db", "upgrade"], "the api must migrate before serving"
    assert api_programs[-1][0] == "gunicorn"
    assert service_commands(compose_services["worker"], image)[0][:2] == ["eonyx", "worker"]


def test_every_setting_reaches_the_containers(compose_services: dict[str, Any]) -> None:
    wanted = settings_env_names() - NOT_PASSED_THROUGH
    wanted |= {f"EONYX_LLM_{name}" for name in ("BASE_URL", "MODEL", "API_KEY", "CONTEXT_WINDOW")}
    for name in APP_SERVICES:
        missing = wanted - set(environment(compose_services[name]))
        assert not missing, f"{name} does not receive {sorted(missing)}"


def test_empty_pass_through_values_are_valid_settings(compose_services: dict[str, Any]) -> None:
    """An unset variable reaches the container as "", which must mean "the default"."""
    from shared.core.settings import load_settings

    settings = load_settings(environment(compose_services["worker"]))
    assert str(settings.data_dir) == "/data"
    assert settings.redis_url == "redis://redis:6379/0"


# --- the image -------------------------------------------------------------------------


def test_dockerfile_builds_the_project_as_a_non_root_user() -> None:
    assert DOCKERFILE.is_file()
    instructions = dockerfile_instructions()
    pinned = re.compile(r"python:3\.11\.\d+-slim")  # a patch release, not a moving tag
    froms = [rest.split()[0] for keyword, rest in instructions if keyword == "FROM"]
    assert froms
    assert all(pinned.match(image) for image in froms), froms
    assert len(set(froms)) == 1, "build and run on the same interpreter"
    stage = final_stage()
    installs = re.compile(r"pip install \"?\.(\[[a-z,]+\])?\"?(\s|$)")  # from pyproject
    assert any(k == "RUN" and installs.search(rest) for k, rest in instructions)
    users = [rest for keyword, rest in stage if keyword == "USER"]
    assert users
    assert users[-1].split(":")[0] not in ("root", "0")
    env = " ".join(rest for keyword, rest in stage if keyword == "ENV")
    assert re.search(r"\bDATA_DIR=/data\b", env)
    assert ("EXPOSE", "8000") in stage


def test_dockerfile_copies_every_package() -> None:
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    packages = {
        p.rstrip("*") for p in pyproject["tool"]["setuptools"]["packages"]["find"]["include"]
    }
    copied = set()
    for keyword, rest in dockerfile_instructions():
        if keyword == "COPY" and not rest.startswith("--from"):
            for source in rest.split()[:-1]:
                assert (ROOT / source).exists(), f"COPY {source}: not in the repository"
                copied.add(source.rstrip("/"))
    assert packages <= copied, f"the image misses {packages - copied}"
    assert "pyproject.toml" in copied
    kept = {
        line[1:].strip().rstrip("/")
        for line in DOCKERIGNORE.read_text().splitlines()
        if line.startswith("!")
    }
    assert copied <= kept, f"the dockerignore drops {copied - kept}"
    assert "eonyx" in pyproject["project"]["scripts"]


def test_image_command_and_ports_agree(compose_services: dict[str, Any]) -> None:
    cmd = image_cmd()
    assert cmd[0] == "gunicorn"
    check_program(cmd)
    conf = runpy.run_path(str(GUNICORN_CONF))
    port = conf["bind"].rsplit(":", 1)[1]
    assert ("EXPOSE", port) in final_stage()
    assert [str(p) for p in compose_services["api"]["expose"]] == [port]
    assert f"127.0.0.1:{port}/readyz" in " ".join(compose_services["api"]["healthcheck"]["test"])


def seconds(duration: str) -> float:
    """A compose duration such as `1m30s` or `130s`."""
    units = {"h": 3600, "m": 60, "s": 1, "ms": 0.001}
    parts = re.findall(r"(\d+(?:\.\d+)?)(ms|h|m|s)", str(duration))
    assert parts, duration
    assert "".join(n + u for n, u in parts) == str(duration), duration
    return sum(float(number) * units[unit] for number, unit in parts)


def test_docker_stop_waits_for_a_graceful_gunicorn(compose_services: dict[str, Any]) -> None:
    """docker stop sends SIGKILL after stop_grace_period (10 s by default): running turns
    would be cut off well before gunicorn's own graceful timeout."""
    conf = runpy.run_path(str(GUNICORN_CONF))
    grace = seconds(compose_services["api"].get("stop_grace_period", "10s"))
    assert grace > conf["graceful_timeout"]


# --- gunicorn --------------------------------------------------------------------------


def test_gunicorn_conf_has_the_essentials(monkeypatch: pytest.MonkeyPatch) -> None:
    names = (
        "EONYX_BIND",
        "PORT",
        "WEB_CONCURRENCY",
        "GUNICORN_WORKER_CONNECTIONS",
        "GUNICORN_TIMEOUT",
    )
    for name in names:
        monkeypatch.delenv(name, raising=False)
    conf = runpy.run_path(str(GUNICORN_CONF))
    assert conf["bind"] == "0.0.0.0:8000"
    assert isinstance(conf["workers"], int)
    assert conf["workers"] >= 2
    # Connections are greenlets: an open tab or a waiting turn holds no thread.
    assert conf["worker_class"] == "gevent"
    assert conf["worker_connections"] >= 1000
    assert conf["timeout"] > 300, "the timeout must outlast a long model call"
    assert conf["accesslog"] == "-"
    assert conf["wsgi_app"] == "api.wsgi:app"


def test_the_console_clients_drop_idle_connections_before_gunicorn_does(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A client that reuses a connection just as the server closes it gets "Server
    disconnected without sending a response" (a CI run failed on it): its idle expiry must
    be below gunicorn's keep-alive."""
    from cli.api_client import LIMITS

    monkeypatch.delenv("GUNICORN_KEEPALIVE", raising=False)
    keepalive = runpy.run_path(str(GUNICORN_CONF))["keepalive"]
    assert LIMITS.keepalive_expiry is not None
    assert LIMITS.keepalive_expiry < keepalive


def test_gunicorn_conf_reads_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EONYX_BIND", "127.0.0.1:9999")
    monkeypatch.setenv("WEB_CONCURRENCY", "3")
    monkeypatch.setenv("GUNICORN_TIMEOUT", "600")
    conf = runpy.run_path(str(GUNICORN_CONF))
    assert (conf["bind"], conf["workers"], conf["timeout"]) == ("127.0.0.1:9999", 3, 600)
    monkeypatch.delenv("EONYX_BIND")
    monkeypatch.setenv("PORT", "8123")
    assert runpy.run_path(str(GUNICORN_CONF))["bind"] == "0.0.0.0:8123"
    monkeypatch.setenv("WEB_CONCURRENCY", "many")
    with pytest.raises(SystemExit, match="WEB_CONCURRENCY"):
        runpy.run_path(str(GUNICORN_CONF))


def test_the_access_log_never_shows_a_query_string() -> None:
    """A browser's WebSocket sends its bearer token as `/api/v1/events?token=...`."""
    from datetime import timedelta
    from types import SimpleNamespace

    from gunicorn.config import Config
    from gunicorn.glogging import Logger, SafeAtoms

    fmt = runpy.run_path(str(GUNICORN_CONF))["access_log_format"]
    for atom in ("%(r)s", "%(q)s", "{raw_uri}e", "{query_string}e", "{authorization}i"):
        assert atom not in fmt.lower(), f"{atom} would log a token"
    cfg = Config()
    cfg.set("access_log_format", fmt)
    environ = {
        "REQUEST_METHOD": "GET",
        "RAW_URI": "/api/v1/events?token=secret",
        "PATH_INFO": "/api/v1/events",
        "QUERY_STRING": "token=secret",
        "SERVER_PROTOCOL": "HTTP/1.1",
        "REMOTE_ADDR": "10.0.0.1",
    }
    response = SimpleNamespace(status="101 Switching Protocols", sent=0, headers=[])
    atoms = Logger(cfg).atoms(response, SimpleNamespace(headers=[]), environ, timedelta(0))
    line = fmt % SafeAtoms(atoms)
    assert '"GET /api/v1/events HTTP/1.1" 101' in line
    assert "secret" not in line


def test_the_wsgi_target_exists(tmp_path: Path) -> None:
    module, _, attribute = runpy.run_path(str(GUNICORN_CONF))["wsgi_app"].partition(":")
    assert importlib.util.find_spec(module) is not None
    assert importlib.util.find_spec("workers.celery_app") is not None
    # Importing it builds the app from the environment: do it in a clean child process.
    env = {
        key: value for key, value in os.environ.items() if key not in ("DATABASE_URL", "REDIS_URL")
    }
    env |= {"DATA_DIR": str(tmp_path / "data"), "HOME": str(tmp_path)}
    code = f"import {module} as m; from flask import Flask; assert isinstance(m.{attribute}, Flask)"
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, timeout=60
    )
    assert done.returncode == 0, done.stderr.decode()


# --- env.example -----------------------------------------------------------------------


def test_env_example_documents_every_setting() -> None:
    text = ENV_EXAMPLE.read_text()
    documented = set(re.findall(r"^#?\s*([A-Z][A-Z0-9_]*)=", text, re.MULTILINE))
    missing = settings_env_names() - documented
    assert not missing, f"deploy/env.example does not document {sorted(missing)}"
    llm = {f"EONYX_LLM_{name}" for name in ("BASE_URL", "MODEL", "API_KEY", "CONTEXT_WINDOW")}
    assert llm <= documented


def test_env_example_defaults_match_the_settings() -> None:
    """A documented `NAME=value` that is not the real default would mislead operators."""
    from shared.core.settings import load_settings

    text = ENV_EXAMPLE.read_text()
    documented = dict(re.findall(r"^#\s*([A-Z][A-Z0-9_]*)=(\S+)$", text, re.MULTILINE))
    names = settings_env_names() & set(documented)
    assert len(names) >= 10
    defaults = load_settings({"HOME": "/nonexistent"})
    for name in names:
        with_value = load_settings({"HOME": "/nonexistent", name: documented[name]})
        assert with_value == defaults, f"{name}={documented[name]} is not the default"


def test_readme_configuration_table_lists_every_setting() -> None:
    """The README is the front door: every variable the settings read is in its table."""
    readme = (ROOT / "README.md").read_text()
    documented = set(re.findall(r"^\| `([A-Z][A-Z0-9_]*)` \|", readme, re.MULTILINE))
    missing = settings_env_names() - documented - {"HOME"}
    assert not missing, f"README.md's configuration table lacks {sorted(missing)}"


def test_readme_configuration_table_gives_the_real_defaults() -> None:
    """Each default is written once, on the Settings dataclass; the README must agree."""
    from dataclasses import MISSING, fields

    from shared.core.settings import VARIABLES, Settings

    readme = (ROOT / "README.md").read_text()
    cells = dict(re.findall(r"^\| `([A-Z][A-Z0-9_]*)` \| ([^|]+) \|", readme, re.MULTILINE))
    defaults = {f.name: f.default for f in fields(Settings) if f.default is not MISSING}
    for name, (field_name, _) in VARIABLES.items():
        default, cell = defaults[field_name], cells[name].strip()
        if default is None:
            assert cell.startswith("unset"), f"{name}: README says {cell!r}, the default is unset"
            continue
        shown = re.match(r"`([^`]+)`", cell)
        assert shown, f"{name}: README gives no default in backticks ({cell!r})"
        if isinstance(default, bool):
            assert shown.group(1) == str(default).lower(), f"{name}: {cell!r} vs {default}"
        elif isinstance(default, (int, float)):
            assert float(shown.group(1)) == default, f"{name}: {cell!r} vs {default}"
        else:
            assert shown.group(1) == default, f"{name}: {cell!r} vs {default!r}"


# --- Redis, volumes, profiles, and the variables everything names --------------------------


def test_redis_keeps_its_queue_and_never_evicts(
    compose: dict[str, Any], compose_services: dict[str, Any]
) -> None:
    """A queue must survive a restart (AOF) and must not lose jobs or locks to eviction."""
    redis_service = compose_services["redis"]
    argv = [str(word) for word in redis_service["command"]]
    assert argv[0] == "redis-server"
    assert option(argv, "--appendonly") == "yes"
    assert option(argv, "--appendfsync") in ("everysec", "always")
    assert option(argv, "--maxmemory-policy") == "noeviction"
    data = mounts(redis_service).get("/data")
    assert data in (compose.get("volumes") or {}), "Redis's append-only file needs a volume"


def test_every_named_volume_is_declared_and_used(
    compose: dict[str, Any], compose_services: dict[str, Any]
) -> None:
    declared = set(compose.get("volumes") or {})
    used = {
        source
        for service in compose_services.values()
        for source in mounts(service).values()
        if not source.startswith((".", "/"))
    }
    assert used == declared, f"declared {sorted(declared)}, used {sorted(used)}"
    assert {"eonyx-data", "postgres-data", "redis-data"} <= declared


def compose_variables(raw_compose: dict[str, Any]) -> set[str]:
    """Every `${NAME...}` the compose file reads from .env or the shell."""
    text = COMPOSE.read_text()
    return {m.group("name") for m in INTERPOLATION.finditer(text) if m.group("name")}


def gunicorn_variables() -> set[str]:
    """What the gunicorn config reads, and FORWARDED_ALLOW_IPS, which gunicorn reads itself."""
    source = (ROOT / "api" / "gunicorn_conf.py").read_text()
    names = set(re.findall(r"environ(?:\.get\(|,\s*)[\"']([A-Z][A-Z0-9_]*)[\"']", source))
    assert {"WEB_CONCURRENCY", "GUNICORN_GRACEFUL_TIMEOUT"} <= names
    return names | {"FORWARDED_ALLOW_IPS"}


def documented_in_env_example() -> set[str]:
    return set(re.findall(r"^#?\s*([A-Z][A-Z0-9_]*)=", ENV_EXAMPLE.read_text(), re.MULTILINE))


def test_every_variable_given_to_eonyx_is_one_it_reads(compose_services: dict[str, Any]) -> None:
    """A misspelt setting in the compose file would be silently ignored by the server."""
    known = settings_env_names() | gunicorn_variables()
    for name in APP_SERVICES:
        unknown = set(environment(compose_services[name])) - known
        assert not unknown, f"{name} is given variables Eonyx never reads: {sorted(unknown)}"


def test_every_variable_compose_reads_is_documented(raw_compose: dict[str, Any]) -> None:
    missing = compose_variables(raw_compose) - documented_in_env_example()
    assert not missing, f"deploy/env.example does not document {sorted(missing)}"


def test_every_variable_env_example_documents_is_read_by_something() -> None:
    known = settings_env_names() | gunicorn_variables() | COMPOSE_ONLY | CLIENT_ONLY
    unknown = documented_in_env_example() - known
    assert not unknown, f"deploy/env.example documents unknown variables {sorted(unknown)}"
    assert documented_in_env_example() >= COMPOSE_ONLY


def test_secrets_come_from_the_env_file_only(raw_compose: dict[str, Any]) -> None:
    """No password or token is written into the compose file: each is a `${...}` from .env."""
    secrets = {"POSTGRES_PASSWORD", "EONYX_LLM_API_KEY", "TEAMS_APP_PASSWORD", "METRICS_TOKEN"}
    assert secrets <= compose_variables(raw_compose)
    for name, service in raw_compose["services"].items():
        for key, value in environment(service).items():
            if key in secrets:
                assert value.startswith("${"), f"{name}: {key} is written in the file"
    assert raw_compose["secrets"]["metrics_token"] == {"environment": "METRICS_TOKEN"}


def test_each_container_sums_its_own_metrics(compose_services: dict[str, Any]) -> None:
    """A multiprocess directory shared between containers would mix pids of different
    machines; /dev/shm is each container's own RAM disk, empty at every start."""
    from shared.core.settings import load_settings

    for name in ("api", "worker"):
        env = environment(compose_services[name])
        directory = env["PROMETHEUS_MULTIPROC_DIR"]
        assert directory.startswith("/dev/shm/"), directory
        assert directory not in mounts(compose_services[name])
        load_settings(env)  # a valid setting
    worker = environment(compose_services["worker"])
    assert worker["METRICS_PORT"] in compose_services["worker"]["expose"]


def test_prometheus_scrapes_every_replica_with_the_token(compose_services: dict[str, Any]) -> None:
    prometheus = compose_services["prometheus"]
    assert mounts(prometheus).get("/etc/prometheus/prometheus.yml") == "./deploy/prometheus.yml"
    assert "metrics_token" in prometheus["secrets"]
    conf = yaml.safe_load(PROMETHEUS_CONF.read_text())
    jobs = {job["job_name"]: job for job in conf["scrape_configs"]}
    worker_port = int(environment(compose_services["worker"])["METRICS_PORT"])
    api_port = int(runpy.run_path(str(GUNICORN_CONF))["bind"].rsplit(":", 1)[1])
    for job, service, port in (
        ("eonyx-api", "api", api_port),
        ("eonyx-worker", "worker", worker_port),
    ):
        scrape = jobs[job]
        assert scrape.get("metrics_path", "/metrics") == "/metrics"
        assert scrape["authorization"]["credentials_file"] == "/run/secrets/metrics_token"
        (sd,) = scrape["dns_sd_configs"]  # one target per replica, whatever the scale
        assert sd["names"] == [service]
        assert sd["port"] == port


def test_the_collector_receives_what_eonyx_sends(compose_services: dict[str, Any]) -> None:
    collector = compose_services["otel-collector"]
    target = option(collector["command"], "--config") or collector["command"][0].split("=", 1)[1]
    assert mounts(collector).get(target) == "./deploy/otel-collector.yaml"
    conf = yaml.safe_load(OTEL_CONF.read_text())
    http = conf["receivers"]["otlp"]["protocols"]["http"]["endpoint"]
    port = http.rsplit(":", 1)[1]
    assert port in [str(p) for p in collector["expose"]]
    pipeline = conf["service"]["pipelines"]["traces"]
    assert "otlp" in pipeline["receivers"]
    assert pipeline["exporters"]
    assert set(pipeline["exporters"]) <= set(conf["exporters"])
    # The endpoint env.example suggests is the one the collector listens on.
    assert f"http://otel-collector:{port}" in ENV_EXAMPLE.read_text()
    from shared.core.settings import load_settings

    endpoint = f"http://otel-collector:{port}"
    assert load_settings({"OTEL_EXPORTER_OTLP_ENDPOINT": endpoint}).otel_exporter_otlp_endpoint


def test_only_the_edge_publishes_a_port_for_the_api(compose_services: dict[str, Any]) -> None:
    """One front door: a second api replica has no port to fight over, and every request
    crosses the edge, whose forwarded headers the api trusts (it is the only one to reach it)."""
    edge, api = compose_services["edge"], compose_services["api"]
    assert "ports" not in api
    assert [str(p) for p in edge["ports"]] == ["8000:80", "8443:443"]
    assert environment(api)["FORWARDED_ALLOW_IPS"] == "*"
    assert edge["depends_on"]["api"]["condition"] == "service_healthy"
    assert "./deploy/Caddyfile:/etc/caddy/Caddyfile:ro" in edge["volumes"]


def test_the_edge_serves_plain_http_until_a_public_host_is_named(
    raw_compose: dict[str, Any],
) -> None:
    unnamed = interpolate(raw_compose, {})["services"]["edge"]
    assert environment(unnamed)["EONYX_SITE"] == "http://"
    named = interpolate(raw_compose, {"EONYX_PUBLIC_HOST": "eonyx.example.com"})
    assert environment(named["services"]["edge"])["EONYX_SITE"] == "eonyx.example.com"
    assert "{$EONYX_SITE}" in CADDYFILE.read_text()


def test_the_edge_spreads_over_every_api_replica() -> None:
    """Compose's DNS answers `api` with every replica: the edge looks it up again and
    again (a `--scale api=N` replica gets traffic within seconds) and streams as it comes."""
    api_port = runpy.run_path(str(GUNICORN_CONF))["bind"].rsplit(":", 1)[1]
    lines = [line.split("#")[0].split() for line in CADDYFILE.read_text().splitlines()]
    directives = {words[0]: words[1:] for words in lines if words}
    assert directives["dynamic"] == ["a", "api", api_port, "{"]
    assert seconds(directives["refresh"][0]) <= 10
    assert directives["flush_interval"] == ["-1"]


def test_gunicorn_gives_its_workers_one_metrics_directory(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """With metrics on, gunicorn's processes must share a multiprocess directory, or each
    scrape would answer for whichever worker took it: one is made when none is given."""
    monkeypatch.delenv("METRICS_TOKEN", raising=False)
    conf = runpy.run_path(str(GUNICORN_CONF))
    assert "on_starting" not in conf
    assert "child_exit" not in conf
    monkeypatch.setenv("METRICS_TOKEN", "a-token-of-24-characters")
    # Empty, not deleted: monkeypatch then restores the variable's absence afterwards.
    monkeypatch.setenv("PROMETHEUS_MULTIPROC_DIR", "")
    conf = runpy.run_path(str(GUNICORN_CONF))
    conf["on_starting"](None)
    made = Path(os.environ["PROMETHEUS_MULTIPROC_DIR"])  # what the forked workers inherit
    assert made.is_dir()
    assert not any(made.iterdir())
    made.rmdir()
    given = tmp_path / "metrics"
    monkeypatch.setenv("PROMETHEUS_MULTIPROC_DIR", str(given))
    conf["on_starting"](None)
    assert os.environ["PROMETHEUS_MULTIPROC_DIR"] == str(given)
    assert given.is_dir()
    assert callable(conf["child_exit"])
    assert conf["logger_class"] == "api.gunicorn_logging.EonyxLogger"


def test_the_mcp_service_serves_agents_from_the_same_image(
    compose_services: dict[str, Any],
) -> None:
    """`eonyx mcp --http` on 8001, a client of the api (over the compose network, with each
    agent's API key), from the image the api runs; healthy when it answers /healthz."""
    mcp = compose_services["mcp"]
    api = compose_services["api"]
    assert mcp["image"] == api["image"]
    argvs = service_commands(mcp, image_cmd())
    assert len(argvs) == 1
    argv = argvs[0]
    check_program(argv)
    assert argv[:3] == ["eonyx", "mcp", "--http"]
    assert option(argv, "--host") == "0.0.0.0"
    port = option(argv, "--port")
    assert [str(p) for p in mcp["ports"]] == [f"8001:{port}"]
    env = environment(mcp)
    assert env == {"EONYX_URL": "http://api:8000"}
    assert urlsplit(env["EONYX_URL"]).port == int(api["expose"][0])
    assert mcp["depends_on"] == {"api": {"condition": "service_healthy"}}
    assert f"127.0.0.1:{port}/healthz" in " ".join(mcp["healthcheck"]["test"])
    assert not mounts(mcp), "the mcp service reads nothing from the store"


def test_the_image_is_built_once_and_never_pulled(compose_services: dict[str, Any]) -> None:
    """api builds it; worker, beat and mcp name it (a build each would build it three times,
    and a pull would look for an image no registry has)."""
    builders = [name for name, service in compose_services.items() if "build" in service]
    assert builders == ["api"]
    image = compose_services["api"]["image"]
    for name in ("worker", "beat", "mcp"):
        assert compose_services[name]["image"] == image
        assert compose_services[name]["pull_policy"] == "never"


def test_the_image_is_labelled_with_the_version_eonyx_reports() -> None:
    """`docker image inspect` names the version that `eonyx --version` and /healthz report."""
    labels = " ".join(rest for keyword, rest in final_stage() if keyword == "LABEL")
    found = dict(re.findall(r'(\S+)="([^"]*)"', labels))
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert found["org.opencontainers.image.version"] == pyproject["project"]["version"]
