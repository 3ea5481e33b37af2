"""Schemathesis hooks for tests/openapi_fuzz.py (loaded through SCHEMATHESIS_HOOKS).

- The fuzzer never revokes its own token (`DELETE /tokens/<its id>`); every other call runs.
- An offering it adds with a well-formed `base_url` is pointed at the fake model, the only
  model this sandbox can reach, so binding a role to it does not turn every later chat turn
  into a 502 from an unreachable host. A `base_url` the schema does not allow (pattern or
  length) is left as it is: the server must refuse it.
"""

from __future__ import annotations

import os
from typing import Any

import schemathesis

from shared.llm.models import BASE_URL_RE

OWN_TOKEN_ID = os.environ.get("EONYX_FUZZ_OWN_TOKEN_ID", "")
MODEL_URL = os.environ.get("EONYX_FUZZ_MODEL_URL", "")


@schemathesis.hook
def filter_case(context: schemathesis.HookContext, case: schemathesis.Case) -> bool:
    operation = case.operation
    if operation.method.upper() == "DELETE" and operation.path.endswith("/tokens/{token_id}"):
        return (case.path_parameters or {}).get("token_id") != OWN_TOKEN_ID
    return True


@schemathesis.hook
def map_body(context: schemathesis.HookContext, body: Any) -> Any:
    operation = context.operation
    if (
        operation is not None
        and operation.method.upper() == "POST"
        and operation.path.endswith("/models/offerings")
        and isinstance(body, dict)
        and isinstance(body.get("base_url"), str)
        and len(body["base_url"]) <= 500  # valid as the schema says: pattern and length
        and BASE_URL_RE.fullmatch(body["base_url"])
        and MODEL_URL
    ):
        return {**body, "base_url": MODEL_URL}
    return body
