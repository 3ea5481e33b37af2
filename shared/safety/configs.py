"""Credentials in command lines and configuration formats whose key and value are not written
as KEY=value: `curl -u user:password`, .NET `<add key="DbPassword" value="..." />`, and the
data of a Kubernetes Secret manifest (base64 values under `data:` in a `kind: Secret`).
"""

from __future__ import annotations

import re

from shared.safety.assignments import command_line_password, is_secret_key, quoted_secret
from shared.safety.engine import RuleTable, Scan, is_filler

TABLE = RuleTable()

TABLE.token(
    "password_assignment",
    "a password on a command line",
    r"curl\s(?:[^\n]*?\s)?(?:-u|--user)[=\s]\s*[\"']?[^\s:\"']*:([^\s\"']{4,})",
    needles=("curl",),
    boundary=True,
    group=1,
    valid=command_line_password,
)

_ADD_KEY_RE = re.compile(
    r"<add\s+key\s*=\s*\"(?P<key>[^\"]{1,80})\"\s+value\s*=\s*\"(?P<value>[^\"]*)\"", re.I
)


def _xml_setting(scan: Scan) -> bool:
    """<add key="DbPassword" value="..." />: .NET appSettings, NuGet credentials."""
    if "<add" not in scan.low_ascii:
        return False
    for match in _ADD_KEY_RE.finditer(scan.ascii):
        key = match.group("key").replace("ClearText", "")
        if is_secret_key(key) and quoted_secret(match.group("value")):
            return True
    return False


TABLE.add("password_assignment", "a password in an XML configuration", _xml_setting)

_KIND_SECRET_RE = re.compile(r"\bkind:[ \t]*[\"']?secret[\"']?[ \t]*$", re.M)
_DATA_RE = re.compile(r"^[ \t]*data:[ \t]*$", re.M)
_DATA_ENTRY_RE = re.compile(
    r"\n[ \t]+[\w.\-]+:[ \t]*[\"']?(?P<value>[A-Za-z0-9+/]{10,}={0,3})[\"']?[ \t]*(?=\n|$)"
)
_BLOCK_END_RE = re.compile(r"\n(?=[^ \t\n])")  # the next line that is not indented
_MANIFEST_REACH = 2000  # how far from "kind: Secret" its data block may be


def _kubernetes_secret(scan: Scan) -> bool:
    """A Secret manifest with base64 values under data: (stringData holds plain values,
    which the assignment rule checks)."""
    low = scan.low_ascii
    if "secret" not in low or "data:" not in low:
        return False
    for kind in _KIND_SECRET_RE.finditer(low):
        start = max(0, kind.start() - _MANIFEST_REACH)
        for data in _DATA_RE.finditer(low, start, kind.end() + _MANIFEST_REACH):
            block_end = _BLOCK_END_RE.search(low, data.end())
            end = block_end.start() if block_end else len(low)
            for entry in _DATA_ENTRY_RE.finditer(scan.ascii, data.end(), end):
                if not is_filler(entry.group("value")):
                    return True
    return False


TABLE.add("kubernetes_secret", "the data of a Kubernetes Secret", _kubernetes_secret)
