"""Open websockets keep only the access their credentials still give.

A websocket is authenticated once, at its handshake (``accounts.websockets``), and may
stay open for hours. So each one that is accepted is watched here with the credential
it was opened with (a ``Credential``: the user, and the API token or the session) and
the permission it needs (``run.view`` for a run's events; none beyond a login for the
inbox). When the token is revoked, the session ends (a logout, a password change,
expiry), the user is deactivated or loses the permission, the socket is closed with
``REVOKED`` (4403) and sends nothing more:

- at once when the change is announced on the channel layer (``forge_web.access_hooks``
  sends ``access.changed`` to the user's group, ``group_name(user_id)``, after a token
  revocation, a user's update or a logout commits): each process's ``AccessGuard`` has
  one channel, in the group of every user with a socket open there;
- and in any case within ``FORGE_WS_ACCESS_CHECK_SECONDS``: the guard checks every
  credential with an open socket again at that interval, since a wake-up can be lost,
  and the in-memory layer never crosses processes (SPEC section 6: the layer is a
  wake-up only, the database the truth).

A check costs one round per interval per process, whatever the number of sockets: each
distinct credential is checked once (tokens and plain users of the round in one query
each, a session in one or two), and every socket on it shares the verdict, so a crowd
of a thousand watchers on a few credentials costs a few queries every interval.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import weakref
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from importlib import import_module
from types import SimpleNamespace
from typing import Any

from channels.layers import get_channel_layer
from django.conf import settings
from django.contrib.auth import get_user

from accounts.models import ApiToken, User
from accounts.offloop import DatabaseThreads
from accounts.outages import DATABASE, REDIS, database_unavailable
from forge.backoff import Backoff

__all__ = [
    "REVOKED",
    "AccessGuard",
    "Credential",
    "Watched",
    "credential_of",
    "group_name",
    "guard",
    "holders",
]

logger = logging.getLogger(__name__)

REVOKED = 4403  # close code: not (or no longer) allowed
# How often the guard joins its groups again: a flushed or restarted Redis forgets them.
REJOIN_SECONDS = 30.0
# How long the guard waits after the channel layer failed before it listens again.
LAYER_RETRY = Backoff(first_s=0.5, cap_s=10.0)


def group_name(user_id: int) -> str:
    """Where ``access.changed`` wake-ups for ``user_id`` go (one group per user, so that a
    publisher that sends only a group's latest wake-up never drops another user's)."""
    return f"forge-access-{user_id}"


@dataclass(frozen=True)
class Credential:
    """What a socket was opened with: a user, and the API token or the session that
    proved it (neither: the user alone, as tests that build a scope by hand give)."""

    user_id: int
    token_id: int | None = None
    session_key: str | None = None


@dataclass(eq=False)
class Watched:
    """One open socket: its credential, the permission it needs (None: a login), and
    how to close it."""

    credential: Credential
    permission: str | None
    close: Callable[[], Awaitable[None]]


def holders(credentials: Iterable[Credential]) -> dict[Credential, User | None]:
    """Who each credential still is: the active user it names, or None when the token
    was revoked, the session ended or the user was deactivated."""
    credentials = tuple(credentials)
    found: dict[Credential, User | None] = dict.fromkeys(credentials)
    tokens = [c for c in credentials if c.token_id is not None]
    if tokens:
        live = (
            ApiToken.objects.active()
            .select_related("user")
            .filter(pk__in=[c.token_id for c in tokens])
        )
        by_id = {token.pk: token.user for token in live}
        for credential in tokens:
            user = by_id.get(credential.token_id)
            found[credential] = user if user is not None and user.pk == credential.user_id else None
    plain = [c for c in credentials if c.token_id is None and c.session_key is None]
    if plain:
        users = User.objects.filter(pk__in=[c.user_id for c in plain], is_active=True)
        by_pk = {user.pk: user for user in users}
        for credential in plain:
            found[credential] = by_pk.get(credential.user_id)
    for credential in credentials:
        if credential.token_id is None and credential.session_key is not None:
            found[credential] = _session_user(credential)
    return found


def _session_user(credential: Credential) -> User | None:
    store = import_module(settings.SESSION_ENGINE).SessionStore
    # Django's own check: the session exists and has not expired, and its hash still
    # matches the user's (a changed password ends every session).
    user = get_user(SimpleNamespace(session=store(credential.session_key)))  # type: ignore[arg-type]
    if not user.is_authenticated or user.pk != credential.user_id or not user.is_active:
        return None
    return user  # type: ignore[return-value]


_CHECKER = DatabaseThreads("forge-ws-access")


@dataclass(eq=False)
class AccessGuard:
    """The open sockets of one event loop, checked again while they are open."""

    sockets: dict[Credential, set[Watched]] = field(default_factory=dict)
    _due: set[int] | None = field(default_factory=set)  # users to check now; None: all
    _woken: asyncio.Event = field(default_factory=asyncio.Event)
    _checker: asyncio.Task[None] | None = None
    _channel: str | None = None  # this guard's channel on the layer, once it has one
    _joined: set[int] = field(default_factory=set)  # users whose group it is in

    async def watch(
        self,
        credential: Credential,
        permission: str | None,
        close: Callable[[], Awaitable[None]],
    ) -> Watched:
        """Watch a socket from now until ``forget``; ``close`` is awaited once if its
        access ends."""
        watched = Watched(credential, permission, close)
        self.sockets.setdefault(credential, set()).add(watched)
        if self._checker is None or self._checker.done():
            self._checker = asyncio.create_task(self._check_forever(), name="forge-ws-access")
        await self._join(credential.user_id)
        return watched

    def forget(self, watched: Watched) -> None:
        user_id = watched.credential.user_id
        sockets = self.sockets.get(watched.credential)
        if sockets is not None:
            sockets.discard(watched)
            if not sockets:
                del self.sockets[watched.credential]
        if user_id in self._joined and not any(c.user_id == user_id for c in self.sockets):
            self._joined.discard(user_id)
            asyncio.get_running_loop().create_task(self._leave(user_id))

    def changed(self, user_id: int | None) -> None:
        """A wake-up: check ``user_id``'s sockets now (None: everyone's)."""
        if user_id is None:
            self._due = None
        elif self._due is not None:
            self._due.add(user_id)
        self._woken.set()

    async def _check_forever(self) -> None:
        loop = asyncio.get_running_loop()
        every_one_at = loop.time() + settings.FORGE_WS_ACCESS_CHECK_SECONDS
        while self.sockets:
            # Wake-ups check their users at once, and never put off the round of all.
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._woken.wait(), max(every_one_at - loop.time(), 0))
            self._woken.clear()
            due, self._due = self._due, set()
            if loop.time() >= every_one_at:
                due = None
                every_one_at = loop.time() + settings.FORGE_WS_ACCESS_CHECK_SECONDS
            credentials = [c for c in self.sockets if due is None or c.user_id in due]
            try:
                await self.check(credentials)
            except Exception as error:  # the database is back at a later round
                if database_unavailable(error):
                    DATABASE.failed(error)  # logged once per outage
                else:
                    logger.warning("could not check open websockets' access", exc_info=True)

    async def check(self, credentials: Iterable[Credential]) -> None:
        """Check ``credentials`` now and close the sockets whose access ended."""
        credentials = tuple(credentials)
        if not credentials:
            return
        verdicts = await _CHECKER.run(holders, credentials)
        for credential, user in verdicts.items():
            for watched in tuple(self.sockets.get(credential, ())):
                if user is None or (watched.permission and not user.can(watched.permission)):
                    self.forget(watched)
                    with contextlib.suppress(Exception):  # gone already
                        await watched.close()

    # -- wake-ups ------------------------------------------------------------------------

    async def _join(self, user_id: int) -> None:
        layer = get_channel_layer()
        if layer is None or user_id in self._joined:
            return
        try:
            if self._channel is None:
                # The default prefix: channels_redis reads every process-local channel of
                # one prefix in one loop, and a channel of another prefix waits for that
                # loop's blocking read (5 s) before its own message is read.
                self._channel = await layer.new_channel()
                asyncio.get_running_loop().create_task(self._listen(layer), name="forge-access")
            await layer.group_add(group_name(user_id), self._channel)
            self._joined.add(user_id)
        except Exception as error:  # no wake-ups for now: the periodic check goes on
            REDIS.failed(error)  # logged once per outage

    async def _leave(self, user_id: int) -> None:
        layer = get_channel_layer()
        if layer is not None and self._channel is not None:
            with contextlib.suppress(Exception):
                await layer.group_discard(group_name(user_id), self._channel)

    async def _listen(self, layer: Any) -> None:
        """Receive ``access.changed`` wake-ups; survive the layer going away and coming
        back (a flushed Redis forgets groups: join them again now and then)."""
        assert self._channel is not None
        failures = 0
        rejoin_at = asyncio.get_running_loop().time() + REJOIN_SECONDS
        while True:
            try:
                message = await asyncio.wait_for(layer.receive(self._channel), REJOIN_SECONDS)
                failures = 0
                REDIS.recovered()
                user_id = message.get("user_id")
                self.changed(user_id if isinstance(user_id, int) else None)
            except TimeoutError:
                pass
            except asyncio.CancelledError:
                raise
            except Exception as error:
                REDIS.failed(error)  # logged once per outage; the periodic check goes on
                failures += 1
                await asyncio.sleep(LAYER_RETRY.delay(failures))
                rejoin_at = 0.0
            now = asyncio.get_running_loop().time()
            if now >= rejoin_at:
                rejoin_at = now + REJOIN_SECONDS
                for user_id in tuple(self._joined):
                    with contextlib.suppress(Exception):
                        await layer.group_add(group_name(user_id), self._channel)


_GUARDS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, AccessGuard] = (
    weakref.WeakKeyDictionary()
)


def guard() -> AccessGuard:
    """This event loop's guard (a server runs one loop; tests may run many)."""
    loop = asyncio.get_running_loop()
    found = _GUARDS.get(loop)
    if found is None:
        found = _GUARDS[loop] = AccessGuard()
    return found


def credential_of(scope: dict[str, Any]) -> Credential | None:
    """The credential ``accounts.websockets`` found for a connection, or the user alone
    when a scope was built without it; None for nobody."""
    credential = scope.get("credential")
    if isinstance(credential, Credential):
        return credential
    user = scope.get("user")
    if user is None or not user.is_authenticated:
        return None
    return Credential(user.pk)
