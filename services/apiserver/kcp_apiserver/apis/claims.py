"""Permission claims: an export may claim access to other resources of its consumers (a built-in's ConfigMaps,
Secrets...; or another export's type, named by that export's identity), and each consumer accepts or rejects
each claim in its binding. The provider's virtual workspace shows a consumer's objects of a claimed resource
only while that consumer's binding has accepted the claim (`status.appliedPermissionClaims`), as kcp's does."""

from __future__ import annotations

from dataclasses import dataclass, field

from kcp_apiserver.apis.types import CLAIM_ACCEPTED, ClaimKey, claim_key
from kcp_apiserver.registry.resource import Obj

CLAIMS_CONDITION = "PermissionClaimsApplied"
CLAIMS_APPLIED = "ClaimsApplied"
CLAIMS_PENDING = "ClaimsPending"


@dataclass(frozen=True)
class Claims:
    """What a binding makes of its export's claims."""

    claimed: list[Obj] = field(default_factory=list)  # the export's claims (the binding's status shows them)
    applied: list[Obj] = field(default_factory=list)  # those the binding accepted
    pending: list[str] = field(default_factory=list)  # claims neither accepted nor rejected yet
    unknown: list[str] = field(default_factory=list)  # the binding answers claims the export does not make

    def condition(self) -> tuple[str, str, str] | None:
        """(status, reason, message) of `PermissionClaimsApplied`; None when nothing is claimed or answered."""
        if not self.claimed and not self.unknown:
            return None
        ignored = f"; ignored, the export does not claim them: {', '.join(self.unknown)}" if self.unknown else ""
        if self.pending:
            return ("False", CLAIMS_PENDING, f"accept or reject in spec.permissionClaims: {', '.join(self.pending)}"
                    + ignored)
        accepted = ", ".join(describe(claim_key(c)) for c in self.applied) or "none"
        return "True", CLAIMS_APPLIED, f"accepted: {accepted}{ignored}"


def describe(key: ClaimKey) -> str:
    group, resource, identity = key
    name = f"{resource}.{group}" if group else resource
    return f"{name} (identity {identity[:8]})" if identity else name


def decide_claims(export: Obj, binding: Obj) -> Claims:
    """The export's claims against the binding's answers (matched by group, resource and identity)."""
    claimed = [c for c in (export.get("spec") or {}).get("permissionClaims") or [] if isinstance(c, dict)]
    answers = {claim_key(a): a.get("state") for a in (binding.get("spec") or {}).get("permissionClaims") or []
               if isinstance(a, dict)}
    keys = {claim_key(c) for c in claimed}
    return Claims(
        claimed=[dict(c) for c in claimed],
        applied=[dict(c) for c in claimed if answers.get(claim_key(c)) == CLAIM_ACCEPTED],
        pending=[describe(claim_key(c)) for c in claimed if claim_key(c) not in answers],
        unknown=[describe(k) for k in answers if k not in keys])


def applied_claims(binding: Obj) -> frozenset[ClaimKey]:
    """What a binding's status says it has accepted of its export's claims."""
    return frozenset(claim_key(c) for c in (binding.get("status") or {}).get("appliedPermissionClaims") or []
                     if isinstance(c, dict))
