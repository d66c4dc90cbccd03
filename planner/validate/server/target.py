"""The server a load test drives: ``grpc://HOST:PORT`` or ``http://HOST:PORT``.

Triton serves both protocols on separate ports (8001 gRPC, 8000 HTTP by default), so the
scheme says which client to use and the port is required: a default would silently pick
the other protocol's port on a server that is set up differently.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlsplit

from planner.errors import BadInput

PROTOCOLS = ("grpc", "http")


@dataclass(frozen=True)
class Target:
    """A parsed server address: the protocol and where it listens."""

    protocol: str
    host: str
    port: int

    @property
    def url(self) -> str:
        """The address as given back to people: ``grpc://localhost:8001``."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.protocol}://{host}:{self.port}"

    @property
    def address(self) -> str:
        """``HOST:PORT``, as ``tritonclient`` takes it."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{host}:{self.port}"


def parse_target(text: str) -> Target:
    """``grpc://HOST:PORT`` or ``http://HOST:PORT`` as a ``Target``; BadInput, in one line
    that shows the expected form, for anything else (another scheme, no port, a path)."""
    shown = text if len(text) <= 80 else text[:77] + "..."
    expected = "give grpc://HOST:PORT or http://HOST:PORT, e.g. grpc://localhost:8001"
    try:
        parts = urlsplit(text.strip())
        port = parts.port
    except ValueError:
        raise BadInput(f"--target {shown!r} is not a server address; {expected}") from None
    if parts.scheme not in PROTOCOLS:
        raise BadInput(f"--target {shown!r}: the scheme must be grpc or http; {expected}")
    if not parts.hostname:
        raise BadInput(f"--target {shown!r} names no host; {expected}")
    if port is None:
        raise BadInput(f"--target {shown!r} names no port; {expected}")
    if parts.path not in ("", "/") or parts.query or parts.fragment or parts.username:
        raise BadInput(f"--target {shown!r} has more than a host and port; {expected}")
    if port == 0:
        raise BadInput(f"--target {shown!r}: port 0 is not a port a server listens on")
    return Target(parts.scheme, parts.hostname, port)
