"""The shape of the code, in figures: what issue 40's closing note compares before and after.

    .venv/bin/python bench/code_shape.py            # this tree
    .venv/bin/python bench/code_shape.py --no-walk  # without running a turn

Not a benchmark (`make bench` leaves it out: its name does not start with bench_). It prints:

- the longest functions of the production code (api, cli, shared, workers), in lines;
- the project modules the turn's modules import (`--turn-module`, repeatable);
- import cycles among production modules: strongly connected components of the graph of
  the imports a module runs when it is imported (top level; not `if TYPE_CHECKING:`, not
  inside functions), where a module also imports its package (`__init__` runs first);
- `dict[str, Any]` written in shared/ and in all production code;
- the pairs `duplicates` lists for the whole tree (when the command is on PATH);
- the web client's modules tsc checks, of all it has, and the README's lines;
- the walk of one `POST /api/v1/sessions/<id>/turns` in the API process: the modules of the
  project's functions in the order they are called (a call within the same module is no
  step); the modules visited, how many calls came back to a module already left, and the
  calls from a module into a higher layer's (by the import contracts: callbacks).
"""

from __future__ import annotations

import argparse
import ast
import json
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

PACKAGES = ("api", "cli", "shared", "workers")


def production_files() -> Iterator[tuple[str, Path]]:
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = path.relative_to(ROOT).with_suffix("").parts
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            yield name, path


def longest_functions(most: int) -> list[tuple[int, str]]:
    found = []
    for name, path in production_files():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                length = (node.end_lineno or node.lineno) - node.lineno + 1
                found.append((length, f"{name}.{node.name}"))
    return sorted(found, reverse=True)[:most]


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _run_at_import(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """The statements importing a module runs: its top level, into `if` and `try` blocks
    (not `if TYPE_CHECKING:`), not into functions (an import there is a deliberate lazy one)."""
    for node in body:
        if isinstance(node, ast.If):
            if not _is_type_checking(node):
                yield from _run_at_import(node.body)
            yield from _run_at_import(node.orelse)
        elif isinstance(node, ast.Try):
            for block in (node.body, *(h.body for h in node.handlers), node.orelse, node.finalbody):
                yield from _run_at_import(block)
        else:
            yield node


def imports_of(name: str, path: Path, modules: set[str], *, lazy: bool = False) -> set[str]:
    """The project modules `name` imports (a `from package import x` names the submodule
    `package.x` when there is one, else the package)."""
    is_package = path.name == "__init__.py"
    found: set[str] = set()
    tree = ast.parse(path.read_text())
    nodes = ast.walk(tree) if lazy else _run_at_import(tree.body)
    for node in nodes:
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names if alias.name in modules)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = name.split(".")
                keep = len(parts) - node.level + (1 if is_package else 0)
                base = ".".join(parts[:keep] + ([base] if base else []))
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                if sub in modules:
                    found.add(sub)
                elif base in modules:
                    found.add(base)
    parent = name.rpartition(".")[0]
    if not is_package and parent in modules:
        found.add(parent)  # importing a module runs its package's __init__ first
    found.discard(name)
    return found


def import_graph(*, lazy: bool = False) -> dict[str, set[str]]:
    """Who imports whom; with `lazy`, also the imports inside functions (and TYPE_CHECKING)."""
    files = dict(production_files())
    modules = set(files)
    return {name: imports_of(name, path, modules, lazy=lazy) for name, path in files.items()}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for start in graph:
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def count_any_dicts(folders: tuple[str, ...]) -> int:
    pattern = re.compile(r"dict\[str, Any\]")
    return sum(
        len(pattern.findall(path.read_text()))
        for name, path in production_files()
        if name.split(".")[0] in folders
    )


def duplicate_pairs() -> str:
    if not shutil.which("duplicates"):
        return "n/a (the duplicates command is not on PATH)"
    out = subprocess.run(
        ["duplicates", "--most", "200", "--seconds", "120", "--repo", str(ROOT)],
        capture_output=True,
        text=True,
        check=False,
    ).stdout
    counted = re.search(r"(\d+) pairs of places", out)
    return counted.group(1) if counted else f"n/a ({out.strip()[:200]})"


def tsc_checked() -> tuple[int, int]:
    web = ROOT / "api" / "web"
    modules = sorted(
        path.relative_to(web).as_posix()
        for folder in ("static/js", "static/panels")
        for path in (web / folder).glob("*.js")
    )
    config = json.loads((web / "jsconfig.json").read_text())
    if config["compilerOptions"].get("checkJs"):
        checked = len(modules)
    else:
        checked = sum(1 for name in config.get("files", ()) if name in modules)
    return checked, len(modules)


def _first_of(modules: tuple[str, ...], name: str) -> Any:
    """`name` from the first of `modules` that has it."""
    import importlib

    for module in modules:
        try:
            found = getattr(importlib.import_module(module), name, None)
        except ModuleNotFoundError:
            continue
        if found is not None:
            return found
    raise ImportError(f"none of {modules} has {name}")


def walk_one_turn() -> tuple[int, int, list[str]]:
    """Modules visited and returns to a module left, over one turn (the second one of a
    session, so first-use imports and caches do not count)."""
    import tempfile

    from api.context import runtime_of
    from shared.core.settings import load_settings
    from shared.infra.embedded_redis import EmbeddedRedis
    from tests.fake_llm import FakeLLM

    fake = FakeLLM().start()
    root = Path(tempfile.mkdtemp(prefix="eonyx-shape-"))
    redis = EmbeddedRedis(root)
    try:
        settings = load_settings(
            {
                "DATA_DIR": str(root / "data"),
                "DATABASE_URL": f"sqlite:///{root}/eonyx.db",
                "REDIS_URL": redis.start(),
                "EONYX_LLM_BASE_URL": fake.base_url,
                "EONYX_LLM_MODEL": "fake-model",
                "RATE_LIMITS_ENABLED": "false",
            }
        )
        # Where these live since issue 40, or before it (the script measures both trees).
        create_app = _first_of(("api.app", "api"), "create_app")
        create_user = _first_of(("shared.accounts.people", "shared.accounts"), "create_user")
        database = _first_of(("shared.db.database", "shared.db"), "Database")(settings.database_url)
        database.migrate()
        database.dispose()
        app = create_app(settings)
        rt = runtime_of(app)
        with rt.db.session() as db:
            create_user(db, "walker", "correct horse battery")
        client = app.test_client()
        login = client.post(
            "/api/v1/auth/login", json={"username": "walker", "password": "correct horse battery"}
        )
        headers = {"Authorization": f"Bearer {login.get_json()['token']}"}
        session_id = client.post("/api/v1/sessions", json={}, headers=headers).get_json()["id"]
        url = f"/api/v1/sessions/{session_id}/turns"
        client.post(url, json={"content": "hello"}, headers=headers)
        trail: list[str] = []
        upward: set[tuple[str, str]] = set()

        def where(frame: Any) -> str | None:
            module = frame.f_globals.get("__name__", "") if frame else ""
            return module if module.split(".")[0] in PACKAGES else None

        def caller_of(frame: Any) -> str | None:
            frame = frame.f_back
            while frame is not None and where(frame) is None:
                frame = frame.f_back
            return where(frame)

        def profile(frame: Any, event: str, _arg: Any) -> None:
            if event != "call":
                return
            module = where(frame)
            if module and (not trail or trail[-1] != module):
                trail.append(module)
                caller = caller_of(frame)
                if caller and _layer(module) < _layer(caller):
                    upward.add((caller, module))

        sys.setprofile(profile)
        try:
            answer = client.post(url, json={"content": "and again"}, headers=headers)
        finally:
            sys.setprofile(None)
        assert answer.status_code == 200, answer.get_data(as_text=True)
        rt.close()
    finally:
        redis.stop()
        fake.stop()
        shutil.rmtree(root, ignore_errors=True)
    seen: set[str] = set()
    returns = 0
    for module in trail:
        returns += module in seen
        seen.add(module)
    return len(seen), returns, sorted(f"{a} -> {b}" for a, b in upward)


# The import contracts' layers (pyproject.toml), highest first: a call from a module into a
# higher layer's is a callback (a registered tool or hook, a runtime's method), not an import.
LAYERS = [
    "cli",
    "api",
    "workers",
    "shared.runtime",
    "shared.integrations",
    "shared.chat",
    "shared.memory",
    "shared.sessions",
    "shared.llm",
    "shared.accounts",
    "shared.backup",
    "shared.index",
    "shared.files",
    "shared.db",
    "shared.infra",
    "shared.safety",
    "shared.core",
]
SAME_LAYER = {"workers": "api", "shared.backup": "shared.accounts", "shared.db": "shared.files"}


def _layer(module: str) -> int:
    """The module's layer, 0 the highest; the package of a module outside the list."""
    for name in LAYERS:
        if module == name or module.startswith(name + "."):
            return LAYERS.index(SAME_LAYER.get(name, name))
    return len(LAYERS)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turn-module", action="append", default=None)
    parser.add_argument("--no-walk", action="store_true")
    parser.add_argument("--most", type=int, default=5)
    args = parser.parse_args()
    turn_modules = args.turn_module or ["shared.chat.turns"]

    print(f"== code shape of {ROOT}")
    print("longest functions (lines):")
    for length, name in longest_functions(args.most):
        print(f"  {length:4}  {name}")
    graph = import_graph()
    imported: set[str] = set()
    for module in turn_modules:
        imported |= graph.get(module, set())
    imported -= set(turn_modules)
    print(f"project modules the turn imports ({', '.join(turn_modules)}): {len(imported)}")
    for title, found in (
        ("import cycles at import time", cycles(graph)),
        ("import cycles counting imports inside functions", cycles(import_graph(lazy=True))),
    ):
        print(f"{title}: {len(found)}")
        for component in found:
            shown = ", ".join(component[:8]) + (", ..." if len(component) > 8 else "")
            print(f"  {len(component)} modules: {shown}")
    print(f"dict[str, Any] in shared/: {count_any_dicts(('shared',))}")
    print(f"dict[str, Any] in api, cli, shared, workers: {count_any_dicts(PACKAGES)}")
    print(f"duplicates pairs: {duplicate_pairs()}")
    checked, modules = tsc_checked()
    print(f"web modules tsc checks: {checked} of {modules}")
    print(f"README lines: {len((ROOT / 'README.md').read_text().splitlines())}")
    if not args.no_walk:
        visited, returns, upward = walk_one_turn()
        print(f"walk of one turn (POST /sessions/<id>/turns): {visited} modules, {returns} returns")
        print(f"  calls into a higher layer (callbacks): {len(upward)}")
        for pair in upward:
            print(f"    {pair}")


if __name__ == "__main__":
    main()
