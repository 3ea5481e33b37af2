"""The layering is a contract (pyproject.toml, import-linter), checked on every test run so
that CI catches an import that crosses it, and each package says what it owns. Two AST
checks see what import-linter cannot: a package using a Runtime field that belongs to a
package above it, and an event type or Redis key spelled outside shared/core/registry.py."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHARED_PACKAGES = [
    "core",
    "infra",
    "files",
    "db",
    "index",
    "safety",
    "accounts",
    "backup",
    "llm",
    "sessions",
    "memory",
    "chat",
    "integrations",
]


def test_the_import_contracts_hold() -> None:
    lint_imports = Path(sys.executable).with_name("lint-imports")
    if not lint_imports.exists():
        pytest.fail("lint-imports is not installed: run `make test`, which installs it")
    done = subprocess.run(
        [str(lint_imports), "--no-cache"], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "0 broken" in done.stdout


@pytest.mark.parametrize("package", SHARED_PACKAGES)
def test_each_domain_package_says_what_it_owns_and_may_import(package: str) -> None:
    init = ROOT / "shared" / package / "__init__.py"
    docstring = ast.get_docstring(ast.parse(init.read_text()))
    assert docstring, f"shared/{package}/__init__.py"
    assert "import" in docstring.lower(), f"shared/{package}/__init__.py"


# -- one registry for event types and Redis keys (shared/core/registry.py) --------------------

REGISTRY = ROOT / "shared" / "core" / "registry.py"
SCANNED = ("shared", "api", "workers")


def _registry_names() -> dict[str, str]:
    """The registry's constants, name -> value, read from its source."""
    names = {}
    for node in ast.parse(REGISTRY.read_text()).body:
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant):
            target = node.targets[0]
            assert isinstance(target, ast.Name)
            assert isinstance(node.value.value, str)
            names[target.id] = node.value.value
    return names


def _modules(*tops: str) -> list[Path]:
    return sorted(path for top in tops for path in (ROOT / top).rglob("*.py"))


def _docstrings(tree: ast.Module) -> set[int]:
    """ids of the docstring nodes: prose may name a key or an event."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                found.add(id(body[0].value))
    return found


def _leading_text(node: ast.expr) -> str | None:
    """The literal text a string expression starts with: a constant, or an f-string's head."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr) and node.values:
        head = node.values[0]
        if isinstance(head, ast.Constant) and isinstance(head.value, str):
            return head.value
    return None


EVENT_LIKE = re.compile(r"[a-z]+(?:_[a-z]+)*\.[a-z]+(?:_[a-z]+)*")  # like.updated
KEY_REST = re.compile(r"[^\s/]*")  # what may follow a key's prefix: "memory://" is a URL


def _is_lock_call(node: ast.AST) -> bool:
    """`<locks>.hold(name, ...)`: the lock's name is a Redis key."""
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "hold"
        and bool(node.args)
    )


def registry_literals(path: Path, names: dict[str, str]) -> list[str]:
    """Where `path` spells an event type or a Redis key instead of naming the registry's:
    - a dict's "type" that is a registered event type, or looks like one (`thing.happened`);
    - a string equal to a registered dotted event type;
    - a string or f-string starting with "eonyx:" or with a registered key prefix;
    - a lock name (the first argument of `.hold(...)`) that is a literal."""
    events = {v for k, v in names.items() if k.startswith("EVENT_")}
    prefixes = {v for k, v in names.items() if not k.startswith("EVENT_")} | {"eonyx:"}
    tree = ast.parse(path.read_text())
    prose = _docstrings(tree)
    where = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path
    found: set[str] = set()  # a literal may break two rules: it is told once per message
    for node in ast.walk(tree):
        if isinstance(node, ast.Dict):
            for key, value in zip(node.keys, node.values, strict=True):
                if isinstance(key, ast.Constant) and key.value == "type":
                    kind = value.value if isinstance(value, ast.Constant) else None
                    if isinstance(kind, str) and (kind in events or EVENT_LIKE.fullmatch(kind)):
                        found.add(f"{where}:{value.lineno}: event type {kind!r}")
        elif _is_lock_call(node) and _leading_text(node.args[0]) is not None:
            found.add(f"{where}:{node.lineno}: lock name {_leading_text(node.args[0])!r}")
        if id(node) in prose or not isinstance(node, ast.Constant | ast.JoinedStr):
            continue
        text = _leading_text(node)
        if text is None:
            continue
        if text in events and EVENT_LIKE.fullmatch(text):
            found.add(f"{where}:{node.lineno}: event type {text!r}")
        elif any(KEY_REST.fullmatch(text.removeprefix(p)) for p in prefixes if text.startswith(p)):
            found.add(f"{where}:{node.lineno}: Redis key {text!r}")
    return sorted(found)


def test_event_types_and_redis_keys_are_named_in_the_registry_only() -> None:
    names = _registry_names()
    assert names, "shared/core/registry.py defines no names"
    found = [
        hit
        for path in _modules(*SCANNED)
        if path != REGISTRY and "migrations" not in path.parts
        for hit in registry_literals(path, names)
    ]
    assert not found, "name these through shared.core.registry:\n" + "\n".join(found)


def test_the_registry_check_catches_a_literal(tmp_path: Path) -> None:
    planted = tmp_path / "planted.py"
    planted.write_text(
        "def f(rt, events, sid):\n"
        "    events.publish(rt.redis, 'u', {'type': 'session.title', 'session_id': sid})\n"
        "    with rt.locks.hold(f'turn:{sid}'):\n"
        "        rt.redis.set('eonyx:something', 1)\n"
    )
    hits = registry_literals(planted, _registry_names())
    assert len(hits) == 4, hits  # the event type, the lock (as a lock name and a key), the key


# -- no upward use through the runtime ---------------------------------------------------------
# A domain package takes the protocol of what it uses (shared/<package>/needs.py), never the
# whole Runtime: mypy then refuses `rt.memory` inside shared/sessions, and import-linter sees
# the protocols' imports. The AST check below reads what each Runtime field's type belongs to
# and fails when a package uses a field owned by a package above it (or beside it, in an
# independent layer), whatever its parameter is typed as.


def runtime_imports(path: Path) -> list[str]:
    """Imports of shared.runtime (type-checking ones included) in a domain module."""
    where = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path
    return [
        f"{where}:{node.lineno}: imports shared.runtime; type the parameter with the "
        "protocol of what the package uses (shared/<package>/needs.py)"
        for node in ast.walk(ast.parse(path.read_text()))
        if (isinstance(node, ast.ImportFrom) and node.module == "shared.runtime")
        or (isinstance(node, ast.Import) and any(a.name == "shared.runtime" for a in node.names))
    ]


def test_domain_packages_take_what_they_use_not_the_runtime() -> None:
    found = [
        hit
        for package in SHARED_PACKAGES
        for path in _modules(f"shared/{package}")
        for hit in runtime_imports(path)
    ]
    assert not found, "\n".join(found)


def test_the_runtime_import_check_catches_one(tmp_path: Path) -> None:
    planted = tmp_path / "planted.py"
    planted.write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
        "    from shared.runtime import Runtime\nimport shared.runtime\n"
    )
    assert len(runtime_imports(planted)) == 2


RUNTIME_NAMES = {"rt", "runtime"}  # `rt.x`, `runtime.x`, and `self.rt.x`, `turn.rt.x`...


def shared_layers() -> dict[str, int]:
    """package -> rank in the layers contract (0 is the highest), from pyproject.toml."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    contracts = config["tool"]["importlinter"]["contracts"]
    (layers,) = [c["layers"] for c in contracts if c.get("containers") == ["shared"]]
    return {
        package.strip(): rank for rank, layer in enumerate(layers) for package in layer.split("|")
    }


def runtime_field_owners() -> dict[str, str]:
    """Runtime field -> the shared package its type comes from (fields of outside types, such
    as redis.Redis or str, belong to no package and may be used anywhere; so may Runtime's
    methods, such as hint)."""
    tree = ast.parse((ROOT / "shared" / "runtime.py").read_text())
    imported = {
        alias.asname or alias.name: node.module.split(".")[1]
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("shared.")
        for alias in node.names
    }
    (runtime,) = [n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Runtime"]
    owners = {}
    for statement in runtime.body:
        if isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name):
            named = {n.id for n in ast.walk(statement.annotation) if isinstance(n, ast.Name)}
            packages = {imported[name] for name in named if name in imported}
            if packages:
                (owners[statement.target.id],) = packages
    return owners


def upward_runtime_uses(
    path: Path, package: str, owners: dict[str, str], ranks: dict[str, int]
) -> list[str]:
    """`rt.<field>` in a module of `package` where the field's package is not below it."""
    where = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if not isinstance(node, ast.Attribute) or node.attr not in owners:
            continue
        base = node.value
        name = base.id if isinstance(base, ast.Name) else getattr(base, "attr", None)
        owner = owners[node.attr]
        if name in RUNTIME_NAMES and owner != package and ranks[owner] <= ranks[package]:
            found.append(
                f"{where}:{node.lineno}: rt.{node.attr} belongs to shared.{owner}, "
                f"which shared.{package} may not use (pass what it needs in)"
            )
    return found


def test_no_package_reaches_up_through_the_runtime() -> None:
    owners, ranks = runtime_field_owners(), shared_layers()
    assert {"memory", "store", "db", "llm"} <= owners.keys(), owners
    assert set(owners.values()) <= ranks.keys(), "a Runtime field of a package outside the layers"
    found = [
        hit
        for package in ranks.keys() & set(SHARED_PACKAGES)
        for path in _modules(f"shared/{package}")
        for hit in upward_runtime_uses(path, package, owners, ranks)
    ]
    assert not found, "\n".join(found)


def test_the_runtime_check_catches_an_upward_use(tmp_path: Path) -> None:
    planted = tmp_path / "planted.py"
    planted.write_text("def f(rt, turn):\n    return rt.memory, turn.rt.teams, rt.store\n")
    hits = upward_runtime_uses(planted, "sessions", runtime_field_owners(), shared_layers())
    assert len(hits) == 2, hits  # memory and integrations are above sessions; files is below
