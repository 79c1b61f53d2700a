"""The REST operations the clients make, each as a ``Call``: what to send and how to read
the answer. ``ForgeClient`` and ``AsyncForgeClient`` only carry calls over httpx, so both
send exactly the same requests and read answers the same way (``read``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import httpx

from forge.client.errors import ForgeApiError
from forge.client.models import Compiled, Evaluation, Event, Run, Version

__all__ = ["API_PREFIX", "Call", "no_answer", "read", "request_options", "site_root"]

API_PREFIX = "/api/v1"
_SHOWN = 300  # characters of an unexpected body quoted in an error


@dataclass(frozen=True)
class Call[T]:
    """One operation: method, path under ``/api/v1``, JSON body, query, and the reader of
    a successful answer's JSON."""

    method: str
    path: str
    parse: Callable[[Any], T]
    body: Mapping[str, Any] | None = None
    params: Mapping[str, int | str] | None = None


def site_root(base_url: str) -> str:
    """Forge's site URL (``https://forge.example.com``, or under a path prefix); the API
    is under ``/api/v1`` of it. A URL given with ``/api/v1`` already is taken too."""
    root = base_url.strip().rstrip("/")
    if not root.startswith(("http://", "https://")):
        raise ValueError(f"Forge's URL must start with http:// or https://, got {base_url!r}")
    return root.removesuffix(API_PREFIX)


def document_body(
    document: Mapping[str, Any] | None, source: str | None, format: str | None
) -> dict[str, Any]:
    """A plan document as the API takes it: a JSON object, or text in a format (JSON,
    YAML, Mermaid; guessed when ``format`` is None). The API refuses both or neither."""
    body: dict[str, Any] = {}
    if document is not None:
        body["document"] = dict(document)
    if source is not None:
        body["source"] = source
    if format is not None:
        body["format"] = format
    return body


# --- Operations ---------------------------------------------------------------------------


def compile_plan(body: Mapping[str, Any]) -> Call[Compiled]:
    return Call("POST", "/compile", Compiled.from_data, body)


def create_plan(name: str, body: Mapping[str, Any], note: str, submit: bool) -> Call[Version]:
    payload = {"name": name, "note": note, "submit": submit, **body}
    return Call("POST", "/plans", _latest_version, payload)


def create_version(
    plan_id: int,
    body: Mapping[str, Any],
    *,
    note: str,
    parent: int | None,
    replan_reason: str,
    submit: bool,
) -> Call[Version]:
    payload: dict[str, Any] = {"note": note, "replan_reason": replan_reason, "submit": submit}
    if parent is not None:
        payload["parent"] = parent
    return Call("POST", f"/plans/{plan_id}/versions", Version.from_data, {**payload, **body})


def get_version(plan_id: int, number: int | None) -> Call[Version]:
    if number is None:
        return Call("GET", f"/plans/{plan_id}", _latest_version)
    return Call("GET", f"/plans/{plan_id}/versions/{number}", Version.from_data)


def start_run(plan_id: int, version: int, executor: str = "worker") -> Call[Run]:
    body: dict[str, Any] = {"plan_id": plan_id, "version": version}
    if executor != "worker":  # the default is left out, so older servers read the body
        body["executor"] = executor
    return Call("POST", "/runs", Run.from_data, body)


def gateway_tools() -> Call[list[dict[str, Any]]]:
    """The gateway's tools (``GET /gateway/tools``), as the API answers them."""
    return Call("GET", "/gateway/tools", _objects)


def gateway_call(
    tool: str, arguments: Mapping[str, Any], *, run: int | None = None, step: str | None = None
) -> Call[dict[str, Any]]:
    """One call of an upstream tool through the gateway (``POST /gateway/calls``): bound
    to step ``step`` of run ``run`` when both are given."""
    body: dict[str, Any] = {"tool": tool, "arguments": dict(arguments)}
    if run is not None or step is not None:
        body.update(run=run, step=step)
    return Call("POST", "/gateway/calls", _object, body)


def gateway_call_status(call_id: int) -> Call[str]:
    """The status of held call ``call_id`` (``GET /gateway/calls/{id}/status``)."""
    return Call(
        "GET", f"/gateway/calls/{call_id}/status", lambda data: str(_object(data)["status"])
    )


def _objects(data: Any) -> list[dict[str, Any]]:
    if not isinstance(data, list) or not all(isinstance(item, dict) for item in data):
        raise ValueError("expected a list of objects")
    return list(data)


def _object(data: Any) -> dict[str, Any]:
    if not isinstance(data, dict):
        raise ValueError("expected an object")
    return dict(data)


def rerun_run(run_id: int, steps: Iterable[str]) -> Call[Run]:
    return Call("POST", f"/runs/{run_id}/rerun", Run.from_data, {"steps": list(steps)})


def get_run(run_id: int) -> Call[Run]:
    return Call("GET", f"/runs/{run_id}", Run.from_data)


def events(run_id: int, after: int, limit: int) -> Call[tuple[Event, ...]]:
    return Call(
        "GET",
        f"/runs/{run_id}/events",
        lambda data: tuple(Event.from_data(item) for item in data),
        params={"after": after, "limit": limit},
    )


def upload_evaluation(report: Mapping[str, Any]) -> Call[Evaluation]:
    return Call("POST", "/evaluations", Evaluation.from_data, report)


def _latest_version(data: Any) -> Version:
    return Version.from_data(data["latest_version"])


# --- Answers --------------------------------------------------------------------------------


def request_options(call: Call[Any]) -> dict[str, Any]:
    """``httpx.Client.request``'s arguments for ``call``."""
    options: dict[str, Any] = {"method": call.method, "url": API_PREFIX + call.path}
    if call.body is not None:
        options["json"] = dict(call.body)
    if call.params is not None:
        options["params"] = dict(call.params)
    return options


def read[T](call: Call[T], response: httpx.Response) -> T:
    """The value of a successful answer; ``ForgeApiError`` for anything else."""
    status = response.status_code
    if status >= 400:
        raise _refusal(response)
    where = f"{call.method} {API_PREFIX}{call.path}"
    if not 200 <= status < 300:
        location = response.headers.get("location", "")
        pointing = f", pointing to {location}" if location else ""
        raise ForgeApiError(
            f"{where} answered {status}{pointing} (is Forge's URL right?)",
            code="unexpected_response",
            status=status,
        )
    try:
        return call.parse(response.json())
    except (ValueError, KeyError, TypeError) as exc:
        raise ForgeApiError(
            f"{where} answered {status} with a body that is not what Forge sends "
            f"({type(exc).__name__}: {exc}): {response.text[:_SHOWN]!r}",
            code="unexpected_response",
            status=status,
        ) from None


def _refusal(response: httpx.Response) -> ForgeApiError:
    try:
        body = response.json()
    except ValueError:
        body = None
    if isinstance(body, dict) and isinstance(body.get("code"), str):
        detail = body.get("detail")
        message = detail if isinstance(detail, str) else str(detail)
        return ForgeApiError(message, code=body["code"], status=response.status_code, body=body)
    return ForgeApiError(
        f"HTTP {response.status_code} without Forge's error body: {response.text[:_SHOWN]!r}",
        code="unexpected_response",
        status=response.status_code,
    )


def no_answer(call: Call[Any], exc: httpx.HTTPError, root: str) -> ForgeApiError:
    """The error for a call that got no answer (connection refused, timeout, ...)."""
    where = f"{call.method} {root}{API_PREFIX}{call.path}"
    if isinstance(exc, httpx.TimeoutException):
        return ForgeApiError(f"{where}: no answer in time ({exc!r})", code="timeout")
    return ForgeApiError(f"{where}: {type(exc).__name__}: {exc}", code="unreachable")
