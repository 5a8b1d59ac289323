"""Schemathesis hooks for `npm run fuzz` (loaded through SCHEMATHESIS_HOOKS=hooks).

Two things a schema cannot say, fixed on requests that are meant to be valid only:

- Idempotency-Key: the generator draws keys from the header's pattern, and small keys repeat
  ("0", "!"), so a second valid body under the same key is a legitimate 422. Valid keys get a
  unique suffix (kept inside the pattern); invalid ones are sent as generated.
- starting_after: any uuid is schema-valid, but only one of the merchant's own payments (or, on
  /payments/{id}/refunds, a refund of that payment) is a usable cursor (anything else is a
  documented 400). Valid values that are not ids this run has seen are replaced by a payment the
  fuzz merchant owns (FUZZ_PAYMENT_ID); on the refunds list it is dropped.
"""

import itertools
import os
import uuid

import schemathesis
from schemathesis.core.parameters import ParameterLocation

_counter = itertools.count()
_known_ids = {os.environ["FUZZ_PAYMENT_ID"]}
# Each branch of the header pattern ends differently: bare keys at 255 characters, quoted ones
# at 255 unescaped characters between quotes. A suffix of 10 characters leaves room in both.
_SUFFIX_ROOM = 255 - 10


def _is_positive(case, location):
    meta = case.meta
    if meta is None:
        return True
    component = meta.components.get(location)
    return component is None or component.mode.is_positive


def _unique_key(key):
    suffix = f"~{next(_counter):09d}"
    if key.startswith('"'):
        inner = key[1:-1]
        # Count unescaped characters; leave the key alone if the suffix would not fit.
        if len(inner.replace('\\\\', "x").replace('\\"', "x")) > _SUFFIX_ROOM:
            return f"fuzz-{uuid.uuid4()}"
        return f'"{inner}{suffix}"'
    if len(key) > _SUFFIX_ROOM:
        return f"fuzz-{uuid.uuid4()}"
    return key + suffix


@schemathesis.hook
def before_call(context, case, kwargs):
    headers = case.headers
    if headers is not None and _is_positive(case, ParameterLocation.HEADER):
        key = headers.get("Idempotency-Key")
        if isinstance(key, str) and key:
            headers["Idempotency-Key"] = _unique_key(key)
    query = case.query
    if query and _is_positive(case, ParameterLocation.QUERY):
        cursor = query.get("starting_after")
        if isinstance(cursor, str) and case.operation.path == "/payments/{id}/refunds":
            # Only a refund of that very payment is a cursor there; list from the start instead.
            del query["starting_after"]
        elif isinstance(cursor, str) and cursor.lower() not in _known_ids:
            query["starting_after"] = os.environ["FUZZ_PAYMENT_ID"]


@schemathesis.hook
def after_call(context, case, response):
    if response.status_code in (200, 202):
        try:
            body = response.json()
        except ValueError:
            return
        if isinstance(body, dict) and isinstance(body.get("id"), str):
            _known_ids.add(body["id"].lower())
