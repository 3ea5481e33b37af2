"""The version of Eonyx that runs: `version` in pyproject.toml, read from the installed
distribution. Every surface that names it (`eonyx --version`, /healthz, the MCP server's
serverInfo) asks here, so a release changes it in one place; the image's version label is
the one copy (deploy/Dockerfile: a label cannot read a file), held equal by a test.
CHANGELOG.md says what each version changed for operators."""

from __future__ import annotations

from functools import cache
from importlib.metadata import PackageNotFoundError, version


@cache
def eonyx_version() -> str:
    try:
        return version("eonyx")
    except PackageNotFoundError:  # a source tree that was never installed
        return "0+unknown"
