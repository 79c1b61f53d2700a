"""``ForgeClient``: Forge's REST API from a script, over a blocking httpx client."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import httpx

from forge.client import calls
from forge.client.calls import Call
from forge.client.headers import request_headers
from forge.client.models import Compiled, Evaluation, Event, Run, Version
from forge.client.waiting import delays, wait_bound

__all__ = ["ForgeClient"]


class ForgeClient:
    """A client of one Forge site, acting as the user of ``token``.

    Every method makes one request (``wait_for_decision`` several) and returns a frozen
    value, or raises ``ForgeApiError`` with the API's ``code`` and HTTP ``status``.
    ``transport`` replaces httpx's network transport (tests pass ``httpx.MockTransport``);
    ``sleep`` and ``clock`` are what waiting uses. Close it, or use it in a ``with``.
    """

    def __init__(
        self,
        base_url: str,
        token: str,
        *,
        timeout_s: float = 30.0,
        transport: httpx.BaseTransport | None = None,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.root = calls.site_root(base_url)
        self._http = httpx.Client(
            base_url=self.root,
            headers=request_headers(token),
            timeout=timeout_s,
            transport=transport,
            follow_redirects=False,  # never carry the token to wherever a redirect points
        )
        self._sleep, self._clock = sleep, clock

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> ForgeClient:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def _send[T](self, call: Call[T]) -> T:
        try:
            response = self._http.request(**calls.request_options(call))
        except httpx.HTTPError as exc:
            raise calls.no_answer(call, exc, self.root) from None
        return calls.read(call, response)

    def compile(
        self,
        document: Mapping[str, Any] | None = None,
        *,
        source: str | None = None,
        format: str | None = None,
    ) -> Compiled:
        """Compile a document (a JSON object, or ``source`` text in ``format``: json, yaml,
        mermaid) with the site's tools and policy; nothing is saved."""
        return self._send(calls.compile_plan(calls.document_body(document, source, format)))

    def create_plan(
        self,
        name: str,
        document: Mapping[str, Any] | None = None,
        *,
        source: str | None = None,
        format: str | None = None,
        note: str = "",
        submit: bool = True,
    ) -> Version:
        """Import a new plan; its version 1, authored by this client's user, is submitted
        for review unless ``submit`` is false. A document with compile errors is saved
        too (status ``has_errors``, with its diagnostics)."""
        body = calls.document_body(document, source, format)
        return self._send(calls.create_plan(name, body, note, submit))

    def create_version(
        self,
        plan_id: int,
        document: Mapping[str, Any] | None = None,
        *,
        source: str | None = None,
        format: str | None = None,
        note: str = "",
        parent: int | None = None,
        replan_reason: str = "",
        submit: bool = True,
    ) -> Version:
        """Save the next version of a plan (derived from ``parent``, else the latest)."""
        body = calls.document_body(document, source, format)
        return self._send(
            calls.create_version(
                plan_id, body, note=note, parent=parent, replan_reason=replan_reason,
                submit=submit,
            )
        )  # fmt: skip

    def get_version(self, plan_id: int, number: int | None = None) -> Version:
        """A version with its status, diagnostics and decisions (``None``: the latest)."""
        return self._send(calls.get_version(plan_id, number))

    def wait_for_decision(self, plan_id: int, number: int, *, timeout_s: float = 60.0) -> Version:
        """Poll the version until it no longer waits for a decision, or ``timeout_s`` has
        passed; return it as last seen. ``version.waiting`` still true means the time ran
        out. A draft or a version with errors returns at once: no one can approve it."""
        bound = wait_bound(timeout_s)
        start = self._clock()
        pauses = delays()
        while True:
            version = self.get_version(plan_id, number)
            waited = self._clock() - start
            if not version.waiting or waited >= bound:
                return version
            self._sleep(min(next(pauses), bound - waited))

    def start_run(self, plan_id: int, version: int, executor: str = "worker") -> Run:
        """Start a run of an approved version; 409 with the gate's code otherwise
        (``not_approved``, ``self_approval``, ``content_changed``, ``has_errors``...).
        ``executor="agent"``: the run's MCP tool steps are the agent's to call through
        the gateway (docs/agents.md)."""
        return self._send(calls.start_run(plan_id, version, executor))

    def rerun_run(self, run_id: int, steps: Iterable[str]) -> Run:
        """A new run of run ``run_id``'s version that runs ``steps`` and their descendants
        again and keeps every other step's recorded output; the gate's 409 as for a start,
        400 ``unknown_step``, 409 ``run_in_progress`` or ``needs_reconciliation``."""
        return self._send(calls.rerun_run(run_id, steps))

    def get_run(self, run_id: int) -> Run:
        return self._send(calls.get_run(run_id))

    def events(self, run_id: int, *, after: int = 0, limit: int = 1000) -> tuple[Event, ...]:
        """The run's events with ``seq`` greater than ``after``, in order, at most ``limit``
        (up to 5000); pass the last one's ``seq`` as ``after`` to read on."""
        return self._send(calls.events(run_id, after, limit))

    def upload_evaluation(self, report: Mapping[str, Any]) -> Evaluation:
        """Store an evaluation report (``forge.eval-report/v1``, what ``forge eval
        --json`` prints) on the site; needs the author or operator role."""
        return self._send(calls.upload_evaluation(report))
