"""Client certificates: the TLS layer verified the chain against the server's CA (and --client-ca-file);
the certificate's CN is the user and its O entries the groups, as kube's x509 authenticator reads them."""

from __future__ import annotations

import hashlib
from typing import Any

from aiohttp import web

from kcp_apiserver.apimachinery.request import AUTHENTICATED, CREDENTIAL_ID, UserInfo


def subject_user(subject: Any, der: bytes | None = None) -> UserInfo | None:
    """The user a verified certificate's subject names (ssl's `getpeercert()["subject"]` form), or None
    when it has no common name; kube adds the certificate's SHA-256 as its credential id."""
    name = ""
    groups: list[str] = []
    for rdn in subject or ():
        for attribute, value in rdn:
            if attribute == "commonName" and not name:
                name = value
            elif attribute == "organizationName":
                groups.append(value)
    if not name:
        return None
    if AUTHENTICATED not in groups:
        groups.append(AUTHENTICATED)
    extra = ((CREDENTIAL_ID, (f"X509SHA256={hashlib.sha256(der).hexdigest()}",)),) if der else ()
    return UserInfo(name, groups=tuple(groups), extra=extra)


class ClientCertificateAuthenticator:
    """The user of a request whose connection presented a certificate the TLS handshake verified."""

    async def authenticate(self, request: web.Request) -> UserInfo | None:
        transport = request.transport
        if transport is None:
            return None
        peer = transport.get_extra_info("peercert")
        if not peer:  # no certificate presented (an unverified one never gets this far: the handshake fails)
            return None
        ssl_object = transport.get_extra_info("ssl_object")
        der = ssl_object.getpeercert(binary_form=True) if ssl_object is not None else None
        return subject_user(peer.get("subject"), der)
