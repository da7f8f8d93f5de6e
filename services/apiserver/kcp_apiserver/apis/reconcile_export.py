"""An APIExport's status, written by the server only: its identity, which every binding of it stores its
objects under, and whether every consumer follows its latest schemas (`BindingsUpToDate`: the consumers an
incompatible schema would break, each kept on what it had; see evolution.py).

The identity is kcp's: the sha256 of the `key` of the Secret that `spec.identity.secretRef` names in the
provider's workspace, so two exports given the same key share one identity (an export moved to another
workspace keeps its consumers' objects). Without a reference, the export's own uid stands for the key. A
reference to a Secret that is missing or has no `key` leaves the identity as it was, with `IdentityValid=False`
saying why; changing the key changes the identity (the objects stay stored under the old one)."""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Awaitable, Callable

from kcp_apiserver.apimachinery.request import system_context
from kcp_apiserver.apis.reconcile_binding import INCOMPATIBLE_SCHEMA, UP_TO_DATE, with_condition
from kcp_apiserver.apis.types import API_EXPORT, identity_hash
from kcp_apiserver.registry.resource import Obj
from kcp_apiserver.registry.store import Registry

BINDINGS_UP_TO_DATE = "BindingsUpToDate"
SHOWN = 10  # consumers named in the condition's message; the count says how many there are


def bindings_condition(held: dict[str, str]) -> tuple[str, str, str]:
    """(status, reason, message) of `BindingsUpToDate` for the consumers held back (consumer -> why)."""
    if not held:
        return "True", UP_TO_DATE, "every binding follows the latest schemas"
    names = sorted(held)
    shown = ", ".join(names[:SHOWN]) + (f" and {len(names) - SHOWN} more" if len(names) > SHOWN else "")
    return "False", INCOMPATIBLE_SCHEMA, (f"{len(names)} consumer(s) keep their schema, the latest would break "
                                          f"them: {shown}; {held[names[0]]}")


IDENTITY_KEY = "key"  # kcp's: the Secret's data key holding an export's identity
SecretReader = Callable[[str, str, str], Awaitable[Obj | None]]  # (cluster, namespace, name) -> the Secret


async def wanted_identity(cluster: str, export: Obj, read_secret: SecretReader) -> tuple[str | None, str, str]:
    """(identity or None, reason, message) for `IdentityValid`."""
    meta = export["metadata"]
    ref = (((export.get("spec") or {}).get("identity") or {}).get("secretRef")) or {}
    if not ref:
        return identity_hash(cluster, meta["name"], meta["uid"]), "IdentityValid", "the export's identity is its own"
    where = f'Secret "{ref.get("namespace", "")}/{ref.get("name", "")}"'
    secret = await read_secret(cluster, str(ref.get("namespace") or ""), str(ref.get("name") or ""))
    if secret is None:
        return None, "IdentityNotFound", f"{where} named by spec.identity.secretRef does not exist"
    data = (secret.get("data") or {}).get(IDENTITY_KEY)
    if not data:
        return None, "IdentityInvalid", f'{where} has no "{IDENTITY_KEY}"'
    try:
        key = base64.b64decode(data, validate=True)
    except ValueError:
        return None, "IdentityInvalid", f'{where}\'s "{IDENTITY_KEY}" is not base64'
    return hashlib.sha256(key).hexdigest(), "IdentityValid", f"the identity of the key in {where}"


async def reconcile_export(registry: Registry, cluster: str, export: Obj, held: dict[str, str],
                           read_secret: SecretReader) -> bool:
    """`export` is the controller's own copy; `held` the consumers that stay on an older schema. False while
    its identity Secret is not usable (look again later)."""
    meta = export["metadata"]
    if meta.get("deletionTimestamp"):
        return True
    status = export.setdefault("status", {})
    before = dict(status)
    wanted, reason, message = await wanted_identity(cluster, export, read_secret)
    if wanted is not None:
        status["identityHash"] = wanted  # put back if anyone wrote another: it decides where objects live
    status["conditions"] = with_condition(status.get("conditions"), "IdentityValid",
                                          "True" if wanted is not None else "False", reason, message)
    status["conditions"] = with_condition(status.get("conditions"), BINDINGS_UP_TO_DATE, *bindings_condition(held))
    if status != before:
        await registry.update(API_EXPORT, cluster, "", meta["name"], export, subresource="status",
                              ctx=system_context(cluster))
    return wanted is not None
