"""Where rankers may live: the allow-list of ranker URLs (``RANKDUEL_RANKER_ALLOW``).

An operator token lets its holder make rankduel send requests to any URL it names, and
read back whether (and how) they answered. Without a rule, that token would turn the
service into a proxy to the addresses only rankduel can reach: Redis, the cloud's metadata
service (169.254.169.254), internal admin ports. So by default a ranker must be on a
*public* address, and anything else must be listed.

The rule is checked twice: when a ranker is added (a 422 naming the rule) and on every
connection, against the address actually connected to, so that a name which resolves to
a public address at the check and to an internal one later (DNS rebinding) is refused
too. A refusal at connect time is this process's configuration, not the ranker's
failure: no strike, no forfeit; it is logged naming ``RANKDUEL_RANKER_ALLOW``, and a search
left with no ranker says so
(:meth:`service.search.ranker_health.RankerHealth.refuse_misconfigured`).

Syntax: comma-separated entries, each a hostname (exact, case-insensitive), an IP address,
a CIDR network, or ``*`` for anywhere.

>>> policy = RankerPolicy("127.0.0.1, 10.1.0.0/16, rankers.internal")
>>> policy.address_allowed("10.1.2.3"), policy.address_allowed("10.2.0.1")
(True, False)
>>> policy.address_allowed("93.184.215.14")
True
>>> RankerPolicy("").address_allowed("169.254.169.254")
False
"""

from __future__ import annotations

import ipaddress
import socket
from urllib.parse import urlsplit

IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network

#: what the default (empty) setting lets through, said in error messages
PUBLIC_ONLY = ("only public addresses are allowed (not loopback, private, link-local, "
               "reserved, multicast or unspecified); list it in RANKDUEL_RANKER_ALLOW "
               "(hostnames, IPs, CIDRs, or *) to allow it")


class RankerRefused(ValueError):
    """A ranker URL the allow-list refuses."""


class RankerPolicy:
    """The parsed ``ranker_allow`` setting."""

    def __init__(self, allow: str = "") -> None:
        self.anywhere = False
        self.hosts: set[str] = set()
        self.networks: list[IPNetwork] = []
        for entry in (e.strip() for e in allow.split(",")):
            if not entry:
                continue
            if entry == "*":
                self.anywhere = True
                continue
            try:
                self.networks.append(ipaddress.ip_network(entry, strict=False))
            except ValueError:
                self.hosts.add(entry.lower().rstrip("."))

    def host_listed(self, host: str) -> bool:
        """Whether ``host`` is allowed by name (or everything is)."""
        return self.anywhere or host.lower().rstrip(".") in self.hosts

    def address_allowed(self, address: str) -> bool:
        """Whether an IP address may be connected to: listed, or public."""
        if self.anywhere:
            return True
        try:
            ip = ipaddress.ip_address(address.split("%", 1)[0])
        except ValueError:
            return False
        if any(ip in net for net in self.networks):
            return True
        if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
            ip = ip.ipv4_mapped
        return ip.is_global and not ip.is_multicast

    def check_url(self, url: str) -> None:
        """Refuse (:class:`RankerRefused`) a ranker URL whose host is neither listed nor
        resolves only to allowed addresses. Called when a ranker is added."""
        host = urlsplit(url).hostname or ""
        if self.host_listed(host):
            return
        try:
            infos = socket.getaddrinfo(host, None, type=socket.SOCK_STREAM)
        except (OSError, UnicodeError) as exc:
            raise RankerRefused(f"host {host!r} does not resolve ({exc})") from None
        for info in infos:
            address = str(info[4][0])
            if not self.address_allowed(address):
                raise RankerRefused(f"host {host!r} is {address}: {PUBLIC_ONLY}")

    def check_connected(self, host: str, sock: socket.socket) -> None:
        """Refuse a connection made to an address the rule does not allow (DNS may have
        changed since the ranker was added). Called on every new connection."""
        if self.host_listed(host):
            return
        address = str(sock.getpeername()[0])
        if not self.address_allowed(address):
            raise RankerRefused(f"connected to {address}, which is not allowed")
