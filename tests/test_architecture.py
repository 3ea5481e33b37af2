"""The layering is a contract (pyproject.toml, import-linter), checked on every test run so
that CI catches an import that crosses it, and each package says what it owns."""

from __future__ import annotations

import ast
import subprocess
import sys
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
