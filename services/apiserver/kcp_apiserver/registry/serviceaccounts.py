"""Service-account tokens: kube's JWTs, issued for a ServiceAccount of one logical cluster and
checked offline against the signing key, then against the ServiceAccount still existing.

Claims are kube's (`iss`, `sub`, `aud`, `exp`, `iat`, `nbf`, `jti` and the private `kubernetes.io`
claim naming the namespace and the service account's name and uid) plus `kcp.io/cluster`, the
logical cluster the service account lives in: the token names an identity of that cluster only.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from cryptography.hazmat.primitives.asymmetric import rsa

from kcp_apiserver.apimachinery import jwt
from kcp_apiserver.registry.builtin import SERVICE_ACCOUNT
from kcp_apiserver.registry.catalog import WatchCaches
from kcp_apiserver.registry.resource import Obj
from kcp_apiserver.registry.store import new_uid
from kcp_apiserver.storage.cachestate import Cached
from kcp_apiserver.storage.etcd import KeyNotFound, Storage, StorageError
from kcp_apiserver.storage.keys import object_key

DEFAULT_ISSUER = "https://kubernetes.default.svc"
CLUSTER_CLAIM = "kcp.io/cluster"
KUBE_CLAIM = "kubernetes.io"
LEEWAY_SECONDS = 60  # go-jose's default leeway, which kube's validator uses for exp, nbf and iat
SERVICE_ACCOUNT_PREFIX = "system:serviceaccount:"


def service_account_username(namespace: str, name: str) -> str:
    return f"{SERVICE_ACCOUNT_PREFIX}{namespace}:{name}"


def service_account_groups(namespace: str) -> tuple[str, ...]:
    return ("system:serviceaccounts", f"system:serviceaccounts:{namespace}")


@dataclass(frozen=True, slots=True)
class TokenSubject:
    """What a verified token names: a service account (by uid) in a namespace of a logical cluster."""

    cluster: str
    namespace: str
    name: str
    uid: str
    jti: str
    expires: int  # unix seconds


class ServiceAccountTokens:
    """Issues and verifies tokens with one RSA key, for one issuer and the API server's audiences."""

    def __init__(self, private_key: rsa.RSAPrivateKey, *, issuer: str = DEFAULT_ISSUER,
                 api_audiences: tuple[str, ...] = ()) -> None:
        self.private_key = private_key
        self.public_key = private_key.public_key()
        self.kid = jwt.key_id(self.public_key)
        self.issuer = issuer
        self.api_audiences = api_audiences or (issuer,)

    def issue(self, cluster: str, service_account: Obj, audiences: list[str], seconds: int,
              now: float | None = None) -> tuple[str, int]:
        """A token for the service account, valid `seconds` from now; returns it and its expiry."""
        meta = service_account["metadata"]
        issued = int(time.time() if now is None else now)
        expires = issued + seconds
        claims: dict[str, Any] = {
            "aud": audiences, "exp": expires, "iat": issued, "iss": self.issuer, "jti": new_uid(),
            CLUSTER_CLAIM: cluster,
            KUBE_CLAIM: {"namespace": meta["namespace"],
                         "serviceaccount": {"name": meta["name"], "uid": meta["uid"]}},
            "nbf": issued, "sub": service_account_username(meta["namespace"], meta["name"]),
        }
        return jwt.encode(claims, self.private_key), expires

    def verify(self, token: str, now: float | None = None) -> TokenSubject | None:
        """The subject of a valid token of ours, or None: another issuer's, for another audience, expired,
        not yet valid, or not signed by this key. Whether the service account still exists is the caller's."""
        try:
            claims = jwt.decode(token, self.public_key, self.kid, issuer=self.issuer, audiences=self.api_audiences)
        except jwt.InvalidToken:
            return None
        current = time.time() if now is None else now
        expires, not_before, issued = claims.get("exp"), claims.get("nbf"), claims.get("iat")
        if not isinstance(expires, int) or current > expires + LEEWAY_SECONDS:
            return None
        for moment in (not_before, issued):
            if moment is not None and (not isinstance(moment, int) or current < moment - LEEWAY_SECONDS):
                return None
        private = claims.get(KUBE_CLAIM)
        if not isinstance(private, dict):
            return None
        account = private.get("serviceaccount")
        namespace, cluster = private.get("namespace"), claims.get(CLUSTER_CLAIM)
        if not isinstance(account, dict) or not isinstance(namespace, str) or not isinstance(cluster, str):
            return None
        name, uid = account.get("name"), account.get("uid")
        if not (isinstance(name, str) and isinstance(uid, str) and name and namespace and cluster):
            return None
        if claims.get("sub") != service_account_username(namespace, name):
            return None
        jti = claims.get("jti")
        return TokenSubject(cluster, namespace, name, uid, jti if isinstance(jti, str) else "", expires)

    def openid_configuration(self, jwks_uri: str) -> dict[str, Any]:
        """kube's OIDC discovery document for the service-account issuer."""
        return {"issuer": self.issuer, "jwks_uri": jwks_uri, "response_types_supported": ["id_token"],
                "subject_types_supported": ["public"], "id_token_signing_alg_values_supported": [jwt.ALGORITHM]}

    def jwks(self) -> dict[str, Any]:
        return {"keys": [jwt.jwk(self.public_key)]}


class ServiceAccountLookup:
    """Is this service account (by uid) alive? Answered from the watch cache; on a miss or another uid,
    from etcd, since this replica's cache may not have seen a just-created service account yet."""

    def __init__(self, caches: WatchCaches, storage: Storage) -> None:
        self.caches = caches
        self.storage = storage
        self._seen: dict[str, tuple[Cached, str, bool]] = {}  # key -> (cached value, its uid, terminating)

    async def alive(self, cluster: str, namespace: str, name: str, uid: str) -> bool:
        key = object_key(SERVICE_ACCOUNT.prefix, cluster, namespace, name)
        cache = self.caches.caches.get(SERVICE_ACCOUNT.prefix)
        cached = cache.state.get(key) if cache is not None else None
        if cached is not None:
            seen = self._seen.get(key)
            if seen is None or seen[0] is not cached:
                meta = cached.decode()["metadata"]
                seen = self._seen[key] = (cached, meta.get("uid", ""), bool(meta.get("deletionTimestamp")))
            if seen[1] == uid:
                return not seen[2]
        else:
            self._seen.pop(key, None)
        try:
            meta = (await self.storage.get(key)).obj["metadata"]
        except KeyNotFound:
            return False
        except StorageError:  # etcd unreachable: not proven alive, so not authenticated (kube's answer too)
            return False
        return meta.get("uid") == uid and not meta.get("deletionTimestamp")
