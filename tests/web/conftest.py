"""The web client's browser tests: Debian's Chromium driven by Playwright against a live
`eonyx serve` (API, worker and embedded Redis on SQLite), its model the fake one.

One server per test module (`served`), one browser per run; each test gets a fresh browser
context signed in as its own user, so tests never see each other's chats. Without
/usr/bin/chromium the tests skip, except in CI where they fail.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from cli.api_client import LIMITS
from shared.sessions.titles import INSTRUCTIONS as TITLE_INSTRUCTIONS
from tests.cli.serving import (
    Served,
    eonyx,
    launch_serve,
    ready,
    serve_environment,
)
from tests.conftest import wait_for
from tests.fake_llm import FakeLLM, RecordedRequest, Reply, echo, last_user_text, text
from tests.web.chromium import ARGS, CHROMIUM

PASSWORD = "correct horse battery"
TIMEOUT_MS = 15_000


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    if Path(CHROMIUM).exists():
        return
    if os.environ.get("CI") == "true":
        return  # the `browser` fixture fails, saying why
    skip = pytest.mark.skip(reason=f"{CHROMIUM} is not installed (apt-get install chromium)")
    for item in items:
        if "browser" in getattr(item, "fixturenames", ()):
            item.add_marker(skip)


class Model:
    """The fake model's answers by marker: a test puts a word of its own in its message and
    says what the answer (`answers`) and the title job (`titles`) get for it. Tests and the
    worker's jobs share one model, so nothing depends on the order requests come in."""

    def __init__(self, llm: FakeLLM) -> None:
        self.llm = llm
        # A list is served in order, its last reply from then on (a tool call, then text).
        self.answers: dict[str, Reply | list[Reply]] = {}
        self.titles: dict[str, Reply | list[Reply]] = {}
        llm.set_default(self.reply)

    def reply(self, request: RecordedRequest) -> Reply:
        messages = request.messages
        is_title = bool(messages) and messages[0].get("content") == TITLE_INSTRUCTIONS
        said = last_user_text(request.body)
        for marker, reply in (self.titles if is_title else self.answers).items():
            if marker in said:
                if isinstance(reply, list):
                    return reply.pop(0) if len(reply) > 1 else reply[0]
                return reply
        return text("A generated title") if is_title else echo(request)


@dataclass
class Server:
    """A running `eonyx serve` for one test module, with its fake model."""

    url: str
    served: Served
    llm: FakeLLM
    model: Model
    users: dict[str, dict[str, Any]] = field(default_factory=dict)
    counter: int = 0

    def user(self, *, admin: bool = False) -> dict[str, Any]:
        """A new user and an HTTP client holding a bearer token for them. The first is made
        by `eonyx users create` (an administrator), the others through the API (faster)."""
        self.counter += 1
        name = f"{'admin' if admin else 'user'}{self.counter}"
        if not self.users:
            created = eonyx(
                self.served.env, "users", "create", "root", "--password", PASSWORD, "--admin"
            )
            assert created.returncode == 0, created.stderr
            self.users["root"] = self._login("root", admin=True)
        made = self.users["root"]["http"].post(
            "/users", json={"username": name, "password": PASSWORD, "is_admin": admin}
        )
        assert made.status_code == 201, made.text
        account = self._login(name, admin=admin)
        self.users[name] = account
        return account

    def _login(self, name: str, *, admin: bool) -> dict[str, Any]:
        # Kept across tests: idle connections expire before gunicorn closes them (LIMITS).
        http = httpx.Client(base_url=self.url + "/api/v1", timeout=30, limits=LIMITS)
        login = http.post("/auth/login", json={"username": name, "password": PASSWORD})
        assert login.status_code == 200, login.text
        http.headers["Authorization"] = f"Bearer {login.json()['token']}"
        return {"username": name, "password": PASSWORD, "http": http, "admin": admin}


def start_server(tmp_path: Path, llm: FakeLLM, **env: str) -> tuple[Served, str]:
    environment = serve_environment(tmp_path) | {
        "EONYX_LLM_BASE_URL": llm.base_url,
        "EONYX_LLM_MODEL": "fake-model",
        "LLM_MAX_RETRIES": "0",
        "LLM_READ_TIMEOUT_SECONDS": "10",
        "EONYX_LLM_CONTEXT_WINDOW": "2000",
        "SESSION_TITLE_MODE": "llm",
        "USER_PROFILE_ENABLED": "false",  # no extraction job asking the model in between
        **env,
    }
    served = launch_serve(environment)
    url = served.wait_url()
    with httpx.Client(base_url=url, timeout=10) as http:
        wait_for(lambda: ready(http), 60, "/readyz (the worker's heartbeat)", interval=0.2)
    return served, url


@contextmanager
def running_server(tmp_path: Path, **env: str) -> Iterator[Server]:
    """A served Eonyx and its fake model (`start_server`), stopped as a user stops it."""
    llm = FakeLLM().start()
    served, url = start_server(tmp_path, llm, **env)
    running = Server(url, served, llm, Model(llm))
    try:
        yield running
    finally:
        for account in running.users.values():
            account["http"].close()
        served.stop(grace=30)
        llm.stop()


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    with running_server(tmp_path_factory.mktemp("web-serve")) as running:
        yield running


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """One Chromium per test module. Not per session: Playwright's sync API keeps an asyncio
    loop running in this thread while it is started, and under xdist the same process goes
    on to modules that call asyncio.run (Textual's pilot) or start Playwright themselves."""
    if not Path(CHROMIUM).exists():
        pytest.fail(f"{CHROMIUM} is missing in CI: .ci/run installs it (apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield launched
        launched.close()


@pytest.fixture(scope="session")
def shots(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where the tests put their screenshots (EONYX_WEB_SHOTS to keep them somewhere)."""
    where = os.environ.get("EONYX_WEB_SHOTS")
    if where:
        Path(where).mkdir(parents=True, exist_ok=True)
        return Path(where)
    return tmp_path_factory.mktemp("screenshots")


@dataclass
class Browsing:
    """What a test drives: `open(user)` gives a signed-in page in a new context."""

    server: Server
    browser: Any
    contexts: list[Any] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)  # every page's script errors

    def context(self, **options: Any) -> Any:
        context = self.browser.new_context(
            base_url=self.server.url, viewport={"width": 1280, "height": 800}, **options
        )
        context.set_default_timeout(TIMEOUT_MS)
        self.contexts.append(context)
        return context

    def sign_in(self, page: Any, account: dict[str, Any]) -> None:
        page.goto("/")
        page.get_by_label("Username").fill(account["username"])
        page.get_by_label("Password").fill(account["password"])
        page.get_by_role("button", name="Sign in").click()
        page.get_by_role("button", name="New chat").wait_for()

    def open(self, account: dict[str, Any], context: Any = None, path: str = "/") -> Any:
        page = (context or self.context()).new_page()
        errors = self.errors
        page.on("pageerror", lambda error: errors.append(str(error)))
        page.on(  # what the Content-Security-Policy refused (an inline script, an eval...)
            "console",
            lambda m: errors.append(m.text) if "Content Security Policy" in m.text else None,
        )
        page.errors = errors  # type: ignore[attr-defined]
        self.sign_in(page, account)
        if path != "/":
            page.goto(path)
        return page


@pytest.fixture
def web(server: Server, browser: Any) -> Iterator[Browsing]:
    browsing = Browsing(server, browser)
    yield browsing
    for context in browsing.contexts:
        context.close()
    assert browsing.errors == [], "the page raised errors or broke its CSP"


@pytest.fixture
def user(server: Server) -> dict[str, Any]:
    return server.user()


def poll(condition: Callable[[], Any], what: str, timeout: float = 15) -> Any:
    return wait_for(condition, timeout, what, interval=0.1)
