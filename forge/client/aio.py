"""``AsyncForgeClient``: ``ForgeClient`` for async code (the MCP server), over httpx's
async client. Same requests, same answers, same errors; waiting sleeps with anyio, so it
holds no thread."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import anyio
import httpx

from forge.client import calls
from forge.client.calls import Call
from forge.client.headers import request_headers
from forge.client.models import Compiled, Evaluation, Event, Run, Version
from forge.client.waiting import delays, wait_bound

__all__ = ["AsyncForgeClient", "Polled"]


@dataclass(frozen=True)
class Polled:
    """One look at a version that still waits: how long it has been, out of how long."""

    version: Version
    waited_s: float
    timeout_s: float


class AsyncForgeClient:
    """A client of one Forge site, acting as the user of ``token``; see ``ForgeClient``.

    ``transport`` replaces httpx's network transport: ``httpx.MockTransport`` in tests,
    ``httpx.ASGITransport`` over the site's own application in its web process.
    Close it (``aclose``), or use it in an ``async with``.
    """

    def __init__(
        self,
        base_url: str,
        token: str,
        *,
        timeout_s: float = 30.0,
        transport: httpx.AsyncBaseTransport | None = None,
        sleep: Callable[[float], Awaitable[None]] = anyio.sleep,
        clock: Callable[[], float] = anyio.current_time,
    ) -> None:
        self.root = calls.site_root(base_url)
        self._http = httpx.AsyncClient(
            base_url=self.root,
            headers=request_headers(token),
            timeout=timeout_s,
            transport=transport,
            follow_redirects=False,  # never carry the token to wherever a redirect points
        )
        self._sleep, self._clock = sleep, clock

    async def aclose(self) -> None:
        await self._http.aclose()

    async def __aenter__(self) -> AsyncForgeClient:
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.aclose()

    async def _send[T](self, call: Call[T]) -> T:
        try:
            response = await self._http.request(**calls.request_options(call))
        except httpx.HTTPError as exc:
            raise calls.no_answer(call, exc, self.root) from None
        return calls.read(call, response)

    async def compile(
        self,
        document: Mapping[str, Any] | None = None,
        *,
        source: str | None = None,
        format: str | None = None,
    ) -> Compiled:
        """Compile a document (a JSON object, or ``source`` text in ``format``: json, yaml,
        mermaid) with the site's tools and policy; nothing is saved."""
        return await self._send(calls.compile_plan(calls.document_body(document, source, format)))

    async def create_plan(
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
        return await self._send(calls.create_plan(name, body, note, submit))

    async def create_version(
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
        return await self._send(
            calls.create_version(
                plan_id, body, note=note, parent=parent, replan_reason=replan_reason,
                submit=submit,
            )
        )  # fmt: skip

    async def get_version(self, plan_id: int, number: int | None = None) -> Version:
        """A version with its status, diagnostics and decisions (``None``: the latest)."""
        return await self._send(calls.get_version(plan_id, number))

    async def wait_for_decision(
        self,
        plan_id: int,
        number: int,
        *,
        timeout_s: float = 60.0,
        on_poll: Callable[[Polled], Awaitable[None]] | None = None,
    ) -> Version:
        """Poll the version until it no longer waits for a decision, or ``timeout_s`` has
        passed; return it as last seen. ``version.waiting`` still true means the time ran
        out. A draft or a version with errors returns at once: no one can approve it.
        ``on_poll`` hears of every look that found it still waiting (to report progress)."""
        bound = wait_bound(timeout_s)
        start = self._clock()
        pauses = delays()
        while True:
            version = await self.get_version(plan_id, number)
            waited = self._clock() - start
            if not version.waiting or waited >= bound:
                return version
            if on_poll is not None:
                await on_poll(Polled(version, waited, bound))
            await self._sleep(min(next(pauses), bound - waited))

    async def start_run(self, plan_id: int, version: int, executor: str = "worker") -> Run:
        """Start a run of an approved version; 409 with the gate's code otherwise
        (``not_approved``, ``self_approval``, ``content_changed``, ``has_errors``...).
        ``executor="agent"``: the run's MCP tool steps are the agent's to call through
        the gateway (docs/agents.md)."""
        return await self._send(calls.start_run(plan_id, version, executor))

    async def gateway_tools(self) -> list[dict[str, Any]]:
        """The tools the gateway offers (``GET /gateway/tools``)."""
        return await self._send(calls.gateway_tools())

    async def gateway_call(
        self,
        tool: str,
        arguments: Mapping[str, Any],
        *,
        run: int | None = None,
        step: str | None = None,
    ) -> dict[str, Any]:
        """Call an upstream tool through the gateway; refused with the gateway's codes."""
        return await self._send(calls.gateway_call(tool, arguments, run=run, step=step))

    async def gateway_call_status(self, call_id: int) -> str:
        """The status of a held call (``held``, ``approved``, ``rejected``, ...)."""
        return await self._send(calls.gateway_call_status(call_id))

    async def rerun_run(self, run_id: int, steps: Iterable[str]) -> Run:
        """A new run of run ``run_id``'s version that runs ``steps`` and their descendants
        again and keeps every other step's recorded output; the gate's 409 as for a start,
        400 ``unknown_step``, 409 ``run_in_progress`` or ``needs_reconciliation``."""
        return await self._send(calls.rerun_run(run_id, steps))

    async def get_run(self, run_id: int) -> Run:
        return await self._send(calls.get_run(run_id))

    async def events(self, run_id: int, *, after: int = 0, limit: int = 1000) -> tuple[Event, ...]:
        """The run's events with ``seq`` greater than ``after``, in order, at most ``limit``
        (up to 5000); pass the last one's ``seq`` as ``after`` to read on."""
        return await self._send(calls.events(run_id, after, limit))

    async def upload_evaluation(self, report: Mapping[str, Any]) -> Evaluation:
        """Store an evaluation report (``forge.eval-report/v1``) on the site."""
        return await self._send(calls.upload_evaluation(report))
