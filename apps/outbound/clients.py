"""HTTP clients that dial only what the outbound check allows, at the address it judged.

Every request a client of this module sends — the first and each redirect — goes through its
transport, which parses the request's URL, resolves the host once, judges every address
(:func:`.addresses.judge`) and then sends the request to the first of them: the URL's host is
replaced by that address, the ``Host`` header keeps the name, and for https the name is still
the one TLS sends (SNI) and checks the certificate against. So the address dialled is the one
judged, whatever the name answers a moment later (DNS rebinding), and a redirect to
``http://169.254.169.254/`` is refused like the URL itself.

A refusal is raised from the transport before any connection is opened, as the HTTP library's
own ``ConnectError`` whose cause is the :class:`.addresses.Refused` (:func:`refusal_in` finds it),
and logged here for the operator with the rule and the address. So every caller — the model
SDKs included, which retry and then wrap connection errors — handles it where it handles an
unreachable server, and says its one sentence for "could not be reached" (docs/security.md): a
refused address, a closed port and a filtered one read the same from outside, so neither a run's
error nor a connection test is a port scanner.

The clients never read proxies from the environment (``trust_env=False``): a proxy would make the
connection instead of the transport, and the check would judge an address nobody dials.

Two HTTP libraries are in the deployment: ``httpx2`` (the model SDKs, fastmcp, pydantic-ai) and
``httpx`` (the product's own small clients). Each gets the same transport; :func:`async_client`
and :func:`client` build the ``httpx2`` ones, :func:`legacy_client` and
:func:`legacy_async_client` the ``httpx`` ones.
"""

from __future__ import annotations

import logging
from typing import Any

import anyio.to_thread
import httpx
import httpx2

from . import allowlist
from .addresses import Refused, Target, judge, literal_address, operator_allow_list, resolve

logger = logging.getLogger(__name__)

# How long opening a connection may take. Short and the same everywhere, so a filtered port (no
# answer) fails as a refused one does, instead of holding a request for its whole read timeout.
CONNECT_TIMEOUT_SECONDS = 10.0


def _target_of(url) -> Target:
    scheme = url.scheme
    host = (url.host or "").rstrip(".").lower()
    if scheme not in ("http", "https") or not host:
        raise Refused("scheme", "the URL must start with http:// or https://")
    return Target(
        url=str(url), scheme=scheme, host=host, port=url.port or (443 if scheme == "https" else 80)
    )


def _pinned(library, request, addresses: tuple[str, ...]):
    """A copy of ``request`` sent to ``addresses[0]`` under its own name (the client keeps the
    original, which a redirect is resolved against)."""
    target = request.url.host
    if literal_address(target) == target:
        return request
    extensions = dict(request.extensions)
    if request.url.scheme == "https":
        extensions["sni_hostname"] = target
    return library.Request(
        request.method,
        request.url.copy_with(host=addresses[0]),
        headers=request.headers,
        stream=request.stream,
        extensions=extensions,
    )


async def _checked(policy, library, request) -> tuple[str, ...]:
    # An address written as one needs no DNS: judged on the loop. A name is resolved on a thread
    # (getaddrinfo blocks), so one slow resolver never stalls the other runs of the loop.
    if literal_address((request.url.host or "").lower()) is not None:
        return policy.check(library, request)
    return await anyio.to_thread.run_sync(policy.check, library, request)


class _Policy:
    """What one transport judges with: the allow-list (None: the operator's, read on every
    request so a change of setting applies at once) and the https rule."""

    def __init__(self, allow, https_unless_listed: bool) -> None:
        self.allow = allow
        self.https_unless_listed = https_unless_listed

    def check(self, library, request) -> tuple[str, ...]:
        try:
            target = _target_of(request.url)
            addresses = resolve(target.host)
            allow = operator_allow_list() if self.allow is None else self.allow
            judge(target, addresses, allow, https_unless_listed=self.https_unless_listed)
        except Refused as refused:
            logger.warning(
                "outbound: refused %s %s:%s (%s%s)",
                request.method,
                request.url.host,
                request.url.port or "",
                refused.kind,
                f", {refused.address}" if refused.address else "",
            )
            raise library.ConnectError(refused.sentence, request=request) from refused
        return addresses


def _transport_kwargs(verify, limits) -> dict[str, Any]:
    kwargs: dict[str, Any] = {"trust_env": False}
    if verify is not None:
        kwargs["verify"] = verify
    if limits is not None:
        kwargs["limits"] = limits
    return kwargs


class AsyncPinnedTransport(httpx2.AsyncBaseTransport):
    """``httpx2``'s async transport behind the outbound check (the module docstring)."""

    def __init__(self, *, allow=None, https_unless_listed=False, verify=None, limits=None):
        self._policy = _Policy(allow, https_unless_listed)
        self._inner = httpx2.AsyncHTTPTransport(**_transport_kwargs(verify, limits))

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        addresses = await _checked(self._policy, httpx2, request)
        return await self._inner.handle_async_request(_pinned(httpx2, request, addresses))

    async def aclose(self) -> None:
        await self._inner.aclose()


class PinnedTransport(httpx2.BaseTransport):
    """``httpx2``'s blocking transport behind the outbound check."""

    def __init__(self, *, allow=None, https_unless_listed=False, verify=None, limits=None):
        self._policy = _Policy(allow, https_unless_listed)
        self._inner = httpx2.HTTPTransport(**_transport_kwargs(verify, limits))

    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        addresses = self._policy.check(httpx2, request)
        return self._inner.handle_request(_pinned(httpx2, request, addresses))

    def close(self) -> None:
        self._inner.close()


class LegacyAsyncPinnedTransport(httpx.AsyncBaseTransport):
    """``httpx``'s async transport behind the outbound check."""

    def __init__(self, *, allow=None, https_unless_listed=False, verify=None, limits=None):
        self._policy = _Policy(allow, https_unless_listed)
        self._inner = httpx.AsyncHTTPTransport(**_transport_kwargs(verify, limits))

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        addresses = await _checked(self._policy, httpx, request)
        return await self._inner.handle_async_request(_pinned(httpx, request, addresses))

    async def aclose(self) -> None:
        await self._inner.aclose()


class LegacyPinnedTransport(httpx.BaseTransport):
    """``httpx``'s blocking transport behind the outbound check."""

    def __init__(self, *, allow=None, https_unless_listed=False, verify=None, limits=None):
        self._policy = _Policy(allow, https_unless_listed)
        self._inner = httpx.HTTPTransport(**_transport_kwargs(verify, limits))

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        addresses = self._policy.check(httpx, request)
        return self._inner.handle_request(_pinned(httpx, request, addresses))

    def close(self) -> None:
        self._inner.close()


def _timeout(library, timeout):
    if isinstance(timeout, library.Timeout):
        return timeout
    seconds = 30.0 if timeout is None else float(timeout)
    return library.Timeout(seconds, connect=min(seconds, CONNECT_TIMEOUT_SECONDS))


def async_client(
    *,
    timeout=None,
    allow: tuple[allowlist.Entry, ...] | None = None,
    https_unless_listed: bool = False,
    verify=None,
    limits=None,
    follow_redirects: bool = True,
    **kwargs,
) -> httpx2.AsyncClient:
    """An ``httpx2.AsyncClient`` over :class:`AsyncPinnedTransport` (the model SDKs take one)."""
    return httpx2.AsyncClient(
        timeout=_timeout(httpx2, timeout),
        follow_redirects=follow_redirects,
        trust_env=False,
        transport=AsyncPinnedTransport(
            allow=allow, https_unless_listed=https_unless_listed, verify=verify, limits=limits
        ),
        **kwargs,
    )


def client(*, timeout=None, allow=None, https_unless_listed=False, follow_redirects=True, **kwargs):
    """A blocking ``httpx2.Client`` over :class:`PinnedTransport`."""
    return httpx2.Client(
        timeout=_timeout(httpx2, timeout),
        follow_redirects=follow_redirects,
        trust_env=False,
        transport=PinnedTransport(allow=allow, https_unless_listed=https_unless_listed),
        **kwargs,
    )


def legacy_async_client(
    *, timeout=None, allow=None, https_unless_listed=False, follow_redirects=True, **kwargs
) -> httpx.AsyncClient:
    """An ``httpx.AsyncClient`` over :class:`LegacyAsyncPinnedTransport`."""
    return httpx.AsyncClient(
        timeout=_timeout(httpx, timeout),
        follow_redirects=follow_redirects,
        trust_env=False,
        transport=LegacyAsyncPinnedTransport(allow=allow, https_unless_listed=https_unless_listed),
        **kwargs,
    )


def legacy_client(
    *, timeout=None, allow=None, https_unless_listed=False, follow_redirects=True, **kwargs
) -> httpx.Client:
    """A blocking ``httpx.Client`` over :class:`LegacyPinnedTransport`."""
    return httpx.Client(
        timeout=_timeout(httpx, timeout),
        follow_redirects=follow_redirects,
        trust_env=False,
        transport=LegacyPinnedTransport(allow=allow, https_unless_listed=https_unless_listed),
        **kwargs,
    )


def refusal_in(exc: BaseException | None) -> Refused | None:
    """The :class:`Refused` behind ``exc`` (an SDK wraps what a transport raised), if any."""
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if isinstance(exc, Refused):
            return exc
        if isinstance(exc, BaseExceptionGroup) and exc.exceptions:
            exc = exc.exceptions[0]
            continue
        exc = exc.__cause__ or exc.__context__
    return None


def fastmcp_client_factory(
    headers: dict[str, str] | None = None,
    timeout: httpx2.Timeout | None = None,
    auth: httpx2.Auth | None = None,
    **kwargs,
) -> httpx2.AsyncClient:
    """fastmcp's ``httpx_client_factory``: its usual client, over the pinned transport."""
    return async_client(
        headers=headers,
        timeout=timeout if timeout is not None else httpx2.Timeout(30.0, read=300.0),
        auth=auth,
        follow_redirects=kwargs.get("follow_redirects", True),
    )
