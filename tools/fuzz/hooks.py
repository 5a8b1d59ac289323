"""Schemathesis hooks for `npm run fuzz` (loaded through SCHEMATHESIS_HOOKS=hooks).

Two things a schema cannot say, fixed on requests that are meant to be valid only:

- Idempotency-Key: the generator draws keys from the header's pattern, and small keys repeat
  ("0", "!"), so a second valid body under the same key is a legitimate 422. Valid keys get a
  unique suffix (kept inside the pattern); invalid ones are sent as generated.
- starting_after: any uuid is schema-valid, but only one of the merchant's own payments (or, on
  /payments/{id}/refunds, a refund of that payment) is a usable cursor (anything else is a
  documented 400). Valid values that are not ids this run has seen are replaced by a payment the
  fuzz merchant owns (FUZZ_PAYMENT_ID); on the refunds list it is dropped. On the webhook
  endpoint list it becomes an endpoint this run created; on an endpoint's deliveries it becomes
  the one delivery run.sh seeds when the endpoint is its, and is dropped otherwise.
- Delivery ids: every other valid call of a delivery operation names run.sh's endpoint and
  delivery (FUZZ_ENDPOINT_ID, FUZZ_DELIVERY_ID), so they are fuzzed on one that exists; so does
  every call naming that delivery or an endpoint this run created; that endpoint is never
  deleted.
- A webhook url: where it resolves is a rule no schema states (422 webhook_url_not_allowed), and
  generated hosts would be looked up in DNS. A valid url's host becomes 192.0.2.1, which run.sh
  allows (WEBHOOK_ALLOWED_NETWORKS; TEST-NET-1, and the API alone never delivers); its scheme,
  path and query stay as generated.
- A replay window: `until` must be after `since` (400 otherwise), which a schema cannot state;
  a valid body with until <= since (or instants before year 1) is sent without until.
- GET /events: only one of the merchant's events is a cursor (run.sh's payment's
  `payment.created`, FUZZ_EVENT_ID, or one this run was answered); `created[lt]` must be after
  `created[gte]`, else it is left out.
"""

import itertools
import os
import re
import uuid
from datetime import datetime

import schemathesis
from schemathesis.core.parameters import ParameterLocation

_counter = itertools.count()
_known_ids = {os.environ["FUZZ_PAYMENT_ID"]}
# The merchant's events seen so far: the cursors GET /events accepts.
_event_ids = {os.environ["FUZZ_EVENT_ID"].lower()}
# Webhook endpoints the API created for this run, the usable cursors of their list; the first
# is run.sh's, with one delivery.
_SEED_ENDPOINT = os.environ["FUZZ_ENDPOINT_ID"].lower()
_SEED_DELIVERY = os.environ["FUZZ_DELIVERY_ID"].lower()
_endpoint_ids = [_SEED_ENDPOINT]
_DELIVERY_PATHS = (
    "/webhook_endpoints/{id}/deliveries",
    "/webhook_endpoints/{id}/deliveries/{delivery_id}",
    "/webhook_endpoints/{id}/deliveries/{delivery_id}/retry",
)
_WEBHOOK_HOST = "192.0.2.1"
_WEBHOOK_URL_MAX = 2048
_AUTHORITY = re.compile(r"^([A-Za-z]+://)[^/?#\\]*(.*)$", re.S)
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


def _deliverable(url):
    """The url with its authority (host, port, userinfo) replaced by the allowed test host."""
    match = _AUTHORITY.match(url)
    if match is None:
        return url
    prefix = match.group(1) + _WEBHOOK_HOST
    return prefix + match.group(2)[: _WEBHOOK_URL_MAX - len(prefix)]


def _instant(value):
    try:
        return datetime.fromisoformat(value.replace("z", "Z").replace("Z", "+00:00"))
    except (TypeError, ValueError, AttributeError):
        return None


def _fix_webhook_body(case):
    body = case.body
    if not isinstance(body, dict) or not _is_positive(case, ParameterLocation.BODY):
        return
    if isinstance(body.get("url"), str):
        body["url"] = _deliverable(body["url"])
    if case.operation.path == "/webhook_endpoints/{id}/replay" and "until" in body:
        since, until = _instant(body.get("since")), _instant(body.get("until"))
        # Python's datetime stops at year 1: an instant it cannot read is not compared either.
        if since is None or until is None or until <= since:
            del body["until"]


def _to_seeded_delivery(case):
    """Every other valid call of a delivery operation goes to run.sh's delivery (the rest 404).

    A delivery is asked of run.sh's endpoint whenever its id or the endpoint's is one this run
    knows: the stateful phase pairs an endpoint it just created (which has no delivery: the API
    alone never writes one) with a delivery id from elsewhere, and takes the 404 for a created
    resource gone missing (ST302).
    """
    params = case.path_parameters
    if params is None:
        return
    if not _is_positive(case, ParameterLocation.PATH):
        return
    known = str(params.get("id", "")).lower() in _endpoint_ids
    if "delivery_id" in params and (known or str(params["delivery_id"]).lower() == _SEED_DELIVERY):
        params["id"] = _SEED_ENDPOINT
        params["delivery_id"] = _SEED_DELIVERY
        return
    if next(_counter) % 2 == 0:
        params["id"] = _SEED_ENDPOINT
        if "delivery_id" in params:
            params["delivery_id"] = _SEED_DELIVERY


def _fix_cursor(case, cursor):
    path = case.operation.path
    query = case.query
    if path == "/webhook_endpoints/{id}/deliveries":
        # Only a delivery of that very endpoint is a cursor there: the seeded one, or none.
        if str((case.path_parameters or {}).get("id", "")).lower() == _SEED_ENDPOINT:
            query["starting_after"] = _SEED_DELIVERY
        else:
            del query["starting_after"]
    elif path == "/events":
        if cursor.lower() not in _event_ids:
            query["starting_after"] = os.environ["FUZZ_EVENT_ID"]
    elif path == "/payments/{id}/refunds":
        # Only a refund of that very payment is a cursor there; list from the start instead.
        del query["starting_after"]
    elif path == "/webhook_endpoints":
        if cursor.lower() in _endpoint_ids:
            return
        if _endpoint_ids:
            query["starting_after"] = _endpoint_ids[-1]
        else:
            del query["starting_after"]
    elif cursor.lower() not in _known_ids:
        query["starting_after"] = os.environ["FUZZ_PAYMENT_ID"]


def _keep_seeded_endpoint(case):
    """run.sh's endpoint is never deleted: its delivery would go with it, and every delivery
    operation after that would 404. A DELETE of it (its id is in list answers) names an id that
    never existed instead."""
    params = case.path_parameters
    if params is not None and str(params.get("id", "")).lower() == _SEED_ENDPOINT:
        params["id"] = str(uuid.uuid4())


@schemathesis.hook
def before_call(context, case, kwargs):
    if case.operation.path == "/webhook_endpoints/{id}" and case.method.upper() == "DELETE":
        _keep_seeded_endpoint(case)
    headers = case.headers
    if headers is not None and _is_positive(case, ParameterLocation.HEADER):
        key = headers.get("Idempotency-Key")
        if isinstance(key, str) and key:
            headers["Idempotency-Key"] = _unique_key(key)
    if case.operation.path in _DELIVERY_PATHS:
        _to_seeded_delivery(case)
    query = case.query
    if query and _is_positive(case, ParameterLocation.QUERY):
        cursor = query.get("starting_after")
        if isinstance(cursor, str):
            _fix_cursor(case, cursor)
        if case.operation.path == "/events" and "created[lt]" in query:
            gte, lt = _instant(query.get("created[gte]")), _instant(query.get("created[lt]"))
            if "created[gte]" in query and (gte is None or lt is None or lt <= gte):
                del query["created[lt]"]
    if case.operation.path.startswith("/webhook_endpoints"):
        _fix_webhook_body(case)


@schemathesis.hook
def after_call(context, case, response):
    path, method = case.operation.path, case.method.upper()
    if path == "/webhook_endpoints" and method == "POST":
        if response.status_code == 201:
            try:
                _endpoint_ids.append(response.json()["id"].lower())
            except (ValueError, KeyError, TypeError, AttributeError):
                pass
        return
    if path == "/webhook_endpoints/{id}" and method == "DELETE" and response.status_code == 200:
        deleted = str((case.path_parameters or {}).get("id", "")).lower()
        if deleted in _endpoint_ids:
            _endpoint_ids.remove(deleted)
        return
    if response.status_code in (200, 202):
        try:
            body = response.json()
        except ValueError:
            return
        if isinstance(body, dict) and isinstance(body.get("id"), str):
            (_event_ids if path.startswith("/events") else _known_ids).add(body["id"].lower())
