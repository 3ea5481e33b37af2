"""CI enforces what the project configures: .ci/run lints before it tests, its test command
is the README's, and the pre-commit hooks run the same tools as `make lint`."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent


def _commands(script: str) -> list[str]:
    """The script's command lines, comments and blank lines left out."""
    lines = (line.split("#", 1)[0].strip() for line in script.splitlines())
    return [line for line in lines if line]


def _tool(command: str) -> str:
    """A command's tool and subcommand: `$(BIN)/ruff check .` and `.venv/bin/ruff check
    --force-exclude` give `ruff check`, `$(WEB_BIN)/eslint --max-warnings=0 $(WEB)` `eslint`."""
    words = shlex.split(command)
    name = words[0].rsplit("/", 1)[-1]
    return " ".join([name, *(w for w in words[1:2] if re.fullmatch(r"[a-z]+", w))])


def _lint_tools() -> list[str]:
    """The tools `make lint` runs, in order."""
    recipe = re.search(r"^lint:.*\n((?:\t.*\n)+)", (ROOT / "Makefile").read_text(), re.M)
    assert recipe, "the Makefile has no lint target"
    return [_tool(line.strip()) for line in recipe.group(1).splitlines()]


def test_ci_lints_then_runs_the_readmes_test_command() -> None:
    commands = _commands((ROOT / ".ci" / "run").read_text())
    readme = (ROOT / "README.md").read_text()
    assert re.search(r"^make test\b", readme, re.M), "the README names `make test`"
    lint = next(i for i, c in enumerate(commands) if c == "if ! make lint; then")
    test = next(i for i, c in enumerate(commands) if re.match(r"make test\b", c))
    assert lint < test, "lint runs before the tests"
    failing = commands[lint : commands.index("fi", lint)]
    assert "exit 1" in failing, "a lint failure fails the run"


def test_make_lint_covers_ruff_mypy_the_import_contracts_and_the_web_client() -> None:
    assert _lint_tools() == [
        "ruff check",
        "ruff format",
        "mypy",
        "lint-imports",
        "eslint",
        "prettier",
        "tsc",
    ]


def test_tsc_checks_every_ts_check_module_and_the_stores_and_api_have_it() -> None:
    """`// @ts-check` is a promise only when tsc reads the file: jsconfig.json names each."""
    web = ROOT / "api" / "web"
    config = json.loads((web / "jsconfig.json").read_text())
    checked = {
        path.relative_to(web).as_posix()
        for path in (web / "static").rglob("*.js")
        if "vendor" not in path.parts and path.read_text().startswith("// @ts-check\n")
    }
    assert set(config["files"]) == checked
    assert {"static/js/state.js", "static/js/lists.js", "static/js/api.js"} <= checked


def test_tsc_checks_every_module_of_the_web_client() -> None:
    """checkJs on, and every module of static/js and static/panels named (issue 40, item 7)."""
    web = ROOT / "api" / "web"
    config = json.loads((web / "jsconfig.json").read_text())
    modules = {
        path.relative_to(web).as_posix()
        for folder in ("static/js", "static/panels")
        for path in (web / folder).glob("*.js")
    }
    assert config["compilerOptions"]["checkJs"] is True
    assert set(config["files"]) == modules


def test_make_lint_installs_the_web_tools_from_the_lockfile() -> None:
    """A fresh clone has no api/web/node_modules: `make lint` runs npm ci first."""
    makefile = (ROOT / "Makefile").read_text()
    lint = re.search(r"^lint:(.*)$", makefile, re.M)
    assert lint, "the Makefile has no lint target"
    assert "$(WEB_STAMP)" in lint.group(1).split()
    rule = re.search(r"^\$\(WEB_STAMP\): (.*)\n((?:\t.*\n)+)", makefile, re.M)
    assert rule, "no rule makes $(WEB_STAMP)"
    assert rule.group(1).split() == ["$(WEB)/package-lock.json"]
    assert "npm ci" in rule.group(2)


def test_pre_commit_runs_what_make_lint_runs() -> None:
    config = yaml.safe_load((ROOT / ".pre-commit-config.yaml").read_text())
    entries = [hook["entry"] for repo in config["repos"] for hook in repo["hooks"]]
    hooked = [_tool(e) for e in entries]
    for tool in _lint_tools():
        assert any(h == tool for h in hooked), f"pre-commit does not run {tool}: {hooked}"
