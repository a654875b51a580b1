"""The HTTP proxy the environment gives for a URL: ``HTTP_PROXY``, ``HTTPS_PROXY``,
``NO_PROXY`` (either case), as aiohttp's ``trust_env`` and the SDKs' httpx read them.

The proxy is read from ``<scheme>_proxy`` of the URL's scheme (``ALL_PROXY`` is not
read, as aiohttp did not); a host ``NO_PROXY`` matches goes direct. Credentials come
from the proxy URL's user info, else from ``~/.netrc`` (``NETRC``) for the proxy's
host; they go to the proxy only (``Proxy-Authorization``), never to the API. Only
``http://`` proxies are spoken (an ``https://`` one is skipped with a warning, as aiohttp
skipped it). ``urllib.request`` (45 ms to import) is imported only when a proxy
variable is set.
"""

from __future__ import annotations

import base64
import logging
import os
from typing import NamedTuple
from urllib.parse import unquote, urlsplit

__all__ = ["Proxy", "proxy_for"]

_log = logging.getLogger(__name__)
_VARIABLES = frozenset({"http_proxy", "https_proxy"})


class Proxy(NamedTuple):
    """An HTTP proxy: where it listens, and the headers sent to it (its credentials)."""

    host: str
    port: int
    headers: dict[str, str]


def proxy_for(scheme: str, host: str) -> Proxy | None:
    """The proxy for a request to ``host`` by ``scheme``, or ``None``: go direct."""
    if not any(name.lower() in _VARIABLES for name in os.environ):
        return None
    from urllib.request import getproxies, proxy_bypass

    url = getproxies().get(scheme)
    if not url or proxy_bypass(host):
        return None
    if "://" not in url:
        url = "http://" + url
    parts = urlsplit(url)
    if parts.scheme != "http":
        _log.warning("%s proxies are not supported, ignoring %s", parts.scheme.upper(), url)
        return None
    proxy_host = parts.hostname or ""
    user, password = parts.username, parts.password
    if user is None:
        user, password = _netrc_login(proxy_host)
    headers = {}
    if user is not None:
        token = f"{unquote(user)}:{unquote(password or '')}".encode()
        headers["Proxy-Authorization"] = "Basic " + base64.b64encode(token).decode()
    return Proxy(proxy_host, parts.port or 80, headers)


def _netrc_login(host: str) -> tuple[str | None, str | None]:
    import netrc

    path = os.environ.get("NETRC") or os.path.join(os.path.expanduser("~"), ".netrc")
    try:
        found = netrc.netrc(path).authenticators(host)
    except (OSError, netrc.NetrcParseError):
        return None, None
    return (found[0], found[2]) if found else (None, None)
