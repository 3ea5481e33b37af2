"""The compose stack, run for real: `make compose-smoke` (or `python deploy/compose_smoke.py`).

With `docker compose` or podman-compose (whichever is here; on machines without Docker Hub,
`bash ../shared/containers/standins.sh` first), from deploy/env.example plus test values in
an env file of its own (an operator's .env is never touched), it:

1. builds the image and starts the stack under a project name of its own, waits for
   /readyz (database, store, broker, worker and beat) and compares /healthz's version with
   the image's label;
2. creates the admin without a terminal (`exec -T api eonyx users create ... --password`);
3. signs in and runs a turn against a fake OpenAI-compatible model on this host (the test
   suite's, reached from the containers at host.containers.internal / host.docker.internal);
4. waits for the worker's LLM title and for a like's curation into MEMORY.md;
5. takes the stack down and up again and finds the session, the memory and the like;
6. scales the api to 2 replicas behind the edge, sees both serve requests that came in on
   the one published port, and runs a turn through it;
7. names a host (EONYX_PUBLIC_HOST=localhost, which Caddy certifies with its own local CA
   where a public name gets a real certificate): HTTP redirects to HTTPS, which serves the
   api, and the browser sign-in sets the `__Host-` Secure cookie;
8. brings up the `mcp` profile and lists its tools through MCP's streamable HTTP;
9. tears everything down, volumes included, whatever happened.

Every request goes through the edge (Caddy), the stack's one published port.

It prints each step with its time and exits non-zero at the first step that fails, with the
containers' states and the api's last log lines.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import socket
import ssl
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.fake_llm import FakeLLM, RecordedRequest, Reply, model_answer, text  # noqa: E402

T = TypeVar("T")
PROJECT = "eonyx-smoke"
PASSWORD = "smoke-pa55word"
LABEL_FORMAT = '{{index .Config.Labels "org.opencontainers.image.version"}}'
STANDINS_COMPOSE = Path.home() / ".cache" / "eonyx-standins" / "compose"


class SmokeFailed(Exception):
    pass


def compose_command() -> list[str]:
    if (
        shutil.which("docker")
        and subprocess.run(["docker", "compose", "version"], capture_output=True).returncode == 0
    ):
        return ["docker", "compose"]
    if STANDINS_COMPOSE.is_file():
        return [STANDINS_COMPOSE.read_text().strip()]
    if shutil.which("podman-compose"):
        return ["podman-compose"]
    raise SmokeFailed("neither `docker compose` nor podman-compose is installed")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def wait(what: str, seconds: float, check: Callable[[], T | None]) -> T:
    deadline = time.monotonic() + seconds
    last: object = None
    while time.monotonic() < deadline:
        try:
            found = check()
        except (httpx.HTTPError, KeyError, ValueError) as exc:
            found, last = None, exc
        if found:
            return found
        time.sleep(1)
    raise SmokeFailed(f"no {what} within {seconds:.0f} s (last: {last!r})")


class Stack:
    def __init__(
        self, compose: list[str], env_file: Path, port: int, https_port: int, mcp_port: int
    ) -> None:
        self.engine = "docker" if compose[0] == "docker" else "podman"
        self.base = [*compose, "-p", PROJECT, "--env-file", str(env_file)]
        self.base += ["-f", "docker-compose.yml"]
        self.url = f"http://127.0.0.1:{port}"
        self.https_url = f"https://localhost:{https_port}"
        self.mcp_url = f"http://127.0.0.1:{mcp_port}/mcp"

    def run(
        self, *args: str, check: bool = True, timeout: float = 600, named_host: str = ""
    ) -> str:
        """`compose ARGS`; `named_host` is EONYX_PUBLIC_HOST (the shell's value beats the
        env file's, as for an operator who exports one)."""
        environ = os.environ | {"EONYX_PUBLIC_HOST": named_host}
        done = subprocess.run(
            [*self.base, *args],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=timeout,
            env=environ,
        )
        if check and done.returncode != 0:
            raise SmokeFailed(f"compose {' '.join(args)} failed:\n{done.stdout}\n{done.stderr}")
        return done.stdout

    def ready(self) -> dict[str, Any]:
        def answered() -> dict[str, Any] | None:
            response = httpx.get(f"{self.url}/readyz", timeout=5)
            return response.json() if response.status_code == 200 else None

        return wait("ready /readyz", 240, answered)

    def replicas_serving(self, replicas: int) -> list[int] | None:
        """Requests sent to the published port, counted in each api replica's access log,
        once `replicas` replicas have each served some (None before)."""
        agent = "eonyx-compose-smoke"
        for _ in range(20):
            httpx.get(f"{self.url}/healthz", headers={"User-Agent": agent}, timeout=5)
        ids = self.containers("api")
        counts = [self.container_log(cid).count(agent) for cid in ids]
        return counts if len(counts) == replicas and all(counts) else None

    def edge_root_ca(self) -> ssl.SSLContext:
        """Trust in the root certificate of the edge's local CA (made at its first start)."""

        def pem() -> str | None:
            path = "/data/caddy/pki/authorities/local/root.crt"
            done = subprocess.run(
                [self.engine, "exec", self.containers("edge")[0], "cat", path],
                capture_output=True,
                text=True,
            )
            return done.stdout if done.returncode == 0 else None

        return ssl.create_default_context(cadata=wait("the edge's local CA", 60, pem))

    def image_version(self) -> str:
        done = subprocess.run(
            [self.engine, "image", "inspect", "eonyx:latest", "--format", LABEL_FORMAT],
            capture_output=True,
            text=True,
            check=True,
        )
        return done.stdout.strip()

    def container_log(self, container: str) -> str:
        done = subprocess.run([self.engine, "logs", container], capture_output=True, text=True)
        return done.stdout + done.stderr

    def containers(self, service: str | None = None) -> list[str]:
        """The ids of the project's containers (of one service), running or not, by the
        labels both engines set."""
        labels = [f"com.docker.compose.project={PROJECT}"]
        labels += [f"com.docker.compose.service={service}"] if service else []
        filters = [arg for label in labels for arg in ("--filter", f"label={label}")]
        listed = subprocess.run(
            [self.engine, "ps", "-aq", *filters], capture_output=True, text=True, check=True
        )
        return listed.stdout.split()

    def remove(self) -> None:
        """Everything of the project, volumes included. podman-compose's `down` removes one
        container per service and leaves a scaled service's others (and, while they hold
        the network, the rest): those go by the project's label first."""
        self.run("--profile", "mcp", "down", "-v", check=False)
        if containers := self.containers():
            subprocess.run([self.engine, "rm", "-f", *containers], capture_output=True)
            self.run("--profile", "mcp", "down", "-v", check=False)


@contextmanager
def step(name: str) -> Iterator[None]:
    started = time.monotonic()
    print(f"-- {name}", flush=True)
    yield
    print(f"   ok in {time.monotonic() - started:.1f} s", flush=True)


def env_file(directory: Path, ports: dict[str, int], model_url: str) -> Path:
    values = {name: str(port) for name, port in ports.items()} | {
        "POSTGRES_PASSWORD": "smoke-secret",
        "EONYX_LLM_BASE_URL": model_url,
        "EONYX_LLM_MODEL": "fake-model",
        "SESSION_TITLE_MODE": "llm",
        "LLM_MAX_RETRIES": "1",
    }
    text = (ROOT / "deploy" / "env.example").read_text()
    path = directory / "smoke.env"
    path.write_text(text + "\n" + "".join(f"{k}={v}\n" for k, v in values.items()))
    return path


def answer(request: RecordedRequest) -> Reply:
    """As a model would: a curation request gets its list of operations (the note the turn
    is about); everything else the fake's usual answer (a title in its schema, a reply)."""
    if request.messages[0]["content"].startswith("You curate an assistant's notes"):
        note = {"action": "add", "content": "This project deploys with compose"}
        return text(json.dumps({"operations": [note]}))
    return model_answer(request)


def chat(http: httpx.Client) -> tuple[str, str]:
    """A session with one turn; its id and the assistant message's id."""
    session = http.post("/api/v1/sessions", json={})
    session.raise_for_status()
    sid = session.json()["id"]
    turn = http.post(f"/api/v1/sessions/{sid}/turns", json={"content": "We deploy with compose."})
    if turn.status_code != 200:
        raise SmokeFailed(f"the turn answered {turn.status_code}: {turn.text}")
    return sid, turn.json()["assistant_message"]["id"]


def signed_in(url: str) -> httpx.Client:
    http = httpx.Client(base_url=url, timeout=30)
    login = http.post("/api/v1/auth/login", json={"username": "admin", "password": PASSWORD})
    if login.status_code != 200:
        raise SmokeFailed(f"login answered {login.status_code}: {login.text}")
    http.headers["Authorization"] = f"Bearer {login.json()['token']}"
    return http


def like_status(http: httpx.Client, sid: str, mid: str) -> str | None:
    items = http.get(f"/api/v1/sessions/{sid}/messages").json()["items"]
    liked = next(item for item in items if item["id"] == mid).get("like") or {}
    return liked.get("status")


async def mcp_tools(url: str, token: str) -> list[str]:
    import httpx2
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    headers = {"Authorization": f"Bearer {token}"}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=30) as http,
        streamable_http_client(url, http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        return [tool.name for tool in (await session.list_tools()).tools]


def smoke(stack: Stack) -> None:
    with step("build the image and start the stack"):
        stack.remove()  # what a killed run left
        stack.run("up", "-d", "--build", timeout=1200)
        print(f"   ready: {stack.ready()['checks']}")
        served = httpx.get(f"{stack.url}/healthz").json()["version"]
        label = stack.image_version()
        if label != served:
            raise SmokeFailed(f"the image is labelled {label!r}, /healthz says {served!r}")
        print(f"   version {served} (/healthz and the image's label)")
    with step("create the admin without a terminal"):
        stack.run(
            "exec",
            "-T",
            "api",
            "eonyx",
            "users",
            "create",
            "admin",
            "--admin",
            "--password",
            PASSWORD,
        )
    http = signed_in(stack.url)
    with step("a turn, its LLM title and a like's curation by the worker"):
        sid, mid = chat(http)
        title = wait(
            "LLM title",
            120,
            lambda: (
                (s := http.get(f"/api/v1/sessions/{sid}").json())
                and not s["title_pending"]
                and s["title"]
            ),
        )
        print(f"   title: {title!r}")
        http.post(f"/api/v1/sessions/{sid}/messages/{mid}/like").raise_for_status()
        status = wait(
            "like's outcome",
            120,
            lambda: like_status(http, sid, mid) != "saving" and like_status(http, sid, mid),
        )
        if status != "saved":
            raise SmokeFailed(f"the like ended {status!r}, not 'saved'")
        memory = http.get("/api/v1/memory/agent").json()["content"]
        if "deploys with compose" not in memory:
            raise SmokeFailed(f"the like was saved but MEMORY.md holds {memory!r}")
    with step("down and up again: the session, the memory and the like are kept"):
        stack.run("down")
        stack.run("up", "-d")
        stack.ready()
        http = signed_in(stack.url)
        if http.get(f"/api/v1/sessions/{sid}").json()["title"] != title:
            raise SmokeFailed("the session's title changed across down/up")
        if http.get("/api/v1/memory/agent").json()["content"] != memory:
            raise SmokeFailed("MEMORY.md changed across down/up")
        if like_status(http, sid, mid) != "saved":
            raise SmokeFailed("the like was lost across down/up")
    with step("two api replicas behind the edge"):
        stack.run("up", "-d", "--scale", "api=2")
        served = wait("requests on both api replicas", 180, lambda: stack.replicas_serving(2))
        print(f"   requests per replica: {served}")
        http = signed_in(stack.url)
        chat(http)
    with step("HTTPS on a named host, with Secure cookies behind the edge"):
        stack.run("up", "-d", "--force-recreate", "--no-deps", "edge", named_host="localhost")

        def redirected() -> str | None:
            answer = httpx.get(f"{stack.url}/healthz", timeout=5)
            return answer.headers.get("location") if answer.status_code in (301, 308) else None

        if not wait("plain HTTP's redirect", 240, redirected).startswith("https://"):
            raise SmokeFailed("plain HTTP redirects elsewhere than HTTPS")
        root_ca = stack.edge_root_ca()
        with httpx.Client(base_url=stack.https_url, verify=root_ca, timeout=10) as https:
            wait("HTTPS /readyz", 240, lambda: https.get("/readyz").is_success)
            signin = https.post(
                "/api/v1/auth/session", json={"username": "admin", "password": PASSWORD}
            )
            cookie = signin.headers.get("set-cookie", "")
            if not (cookie.startswith("__Host-eonyx_session=") and "Secure" in cookie):
                raise SmokeFailed(f"the browser sign-in over HTTPS set {cookie!r}")
        stack.run("up", "-d", "--force-recreate", "--no-deps", "edge")
        stack.ready()
    with step("the mcp profile: Eonyx's tools over streamable HTTP"):
        key = http.post("/api/v1/tokens", json={"name": "smoke agent"}).json()["token"]
        stack.run("--profile", "mcp", "up", "-d", "mcp")
        healthz = stack.mcp_url.replace("/mcp", "/healthz")
        wait("mcp /healthz", 120, lambda: httpx.get(healthz).is_success)
        tools = asyncio.run(mcp_tools(stack.mcp_url, key))
        print(f"   tools: {', '.join(sorted(tools))}")


def main() -> int:
    compose = compose_command()
    started = time.monotonic()
    with tempfile.TemporaryDirectory() as tmp, FakeLLM(host="0.0.0.0") as model:
        model.set_default(answer)
        ports = {name: free_port() for name in ("EONYX_PORT", "EONYX_HTTPS_PORT", "EONYX_MCP_PORT")}
        host = "host.docker.internal" if compose[0] == "docker" else "host.containers.internal"
        model_url = f"http://{host}:{model.port}/v1"
        stack = Stack(compose, env_file(Path(tmp), ports, model_url), *ports.values())
        try:
            smoke(stack)
        except (SmokeFailed, httpx.HTTPError, subprocess.TimeoutExpired) as exc:
            print(f"FAILED: {exc}", file=sys.stderr)
            print(stack.run("ps", check=False), file=sys.stderr)
            for service in ("api", "worker"):
                logs = stack.run("logs", "--tail", "30", service, check=False)
                print(logs[-5000:], file=sys.stderr)
            return 1
        finally:
            with step("tear down, volumes included"):
                stack.remove()
    print(f"compose smoke test passed in {time.monotonic() - started:.0f} s")
    return 0


if __name__ == "__main__":
    os.chdir(ROOT)
    sys.exit(main())
