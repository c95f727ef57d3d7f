"""Loaded at start-up by a process with this folder on ``PYTHONPATH``: it may reach the loopback address only.

A name lookup or connection to any other address fails (``OSError``) and is written, one line each, to the file
``LOOPBACK_ONLY_LOG`` names, so a test can assert that a server it started never tried to leave the machine.
Connections Python's ``socket`` module does not make (an event loop's own C sockets) are not seen.
"""

from __future__ import annotations

import os
import socket

_LOG = os.environ.get("LOOPBACK_ONLY_LOG")
_LOCAL = {"127.0.0.1", "::1", "localhost", "0.0.0.0", "", None}


def _refuse(what: str) -> OSError:
    if _LOG:
        with open(_LOG, "a", encoding="utf-8") as log:
            log.write(what + "\n")
    return OSError(f"refused by the test: {what} (loopback only)")


_getaddrinfo = socket.getaddrinfo
_connect = socket.socket.connect
_connect_ex = socket.socket.connect_ex


def _guarded_getaddrinfo(host, *args, **kwargs):  # type: ignore[no-untyped-def]
    name = host.decode() if isinstance(host, bytes) else host
    if name not in _LOCAL:
        raise _refuse(f"getaddrinfo {name}")
    return _getaddrinfo(host, *args, **kwargs)


def _allowed(address: object) -> bool:
    return not isinstance(address, tuple) or address[0] in _LOCAL


def _guarded_connect(self, address):  # type: ignore[no-untyped-def]
    if not _allowed(address):
        raise _refuse(f"connect {address!r}")
    return _connect(self, address)


def _guarded_connect_ex(self, address):  # type: ignore[no-untyped-def]
    if not _allowed(address):
        raise _refuse(f"connect {address!r}")
    return _connect_ex(self, address)


socket.getaddrinfo = _guarded_getaddrinfo
socket.socket.connect = _guarded_connect  # type: ignore[method-assign]
socket.socket.connect_ex = _guarded_connect_ex  # type: ignore[method-assign]
