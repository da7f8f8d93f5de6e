"""kube's DeleteOptions as data: what a DELETE asked for, validated as kube validates it.

Parsing lives with the endpoints, and what the options mean for an object (the
garbage collector's finalizers) with the registry; both speak this type, and the
request's context carries it to admission.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kcp_apiserver.apimachinery import status as st

ORPHAN = "Orphan"
BACKGROUND = "Background"
FOREGROUND = "Foreground"
POLICIES = (FOREGROUND, BACKGROUND, ORPHAN)


@dataclass(frozen=True)
class Propagation:
    """What a DELETE asked for: `policy` (Orphan/Background/Foreground) or the deprecated boolean."""

    policy: str | None = None
    orphan_dependents: bool | None = None

    def validate(self) -> None:
        """kube's ValidateDeleteOptions for these two fields: 422 on DeleteOptions.meta.k8s.io."""
        causes = []
        if self.policy is not None and self.orphan_dependents is not None:
            causes.append(st.Cause("FieldValueInvalid", f'Invalid value: "{self.policy}": orphanDependents and '
                                   "deletionPropagation cannot be both set", "propagationPolicy"))
        if self.policy is not None and self.policy not in POLICIES:
            supported = ", ".join(f'"{p}"' for p in (*POLICIES, "nil"))
            causes.append(st.Cause("FieldValueNotSupported", f'Unsupported value: "{self.policy}": supported '
                                   f"values: {supported}", "propagationPolicy"))
        if causes:
            raise st.invalid("DeleteOptions", "", causes, "meta.k8s.io")


@dataclass(frozen=True)
class DeleteOptions:
    propagation: Propagation = field(default_factory=Propagation)
    preconditions: dict[str, str] | None = None
    dry_run: bool = False
    grace_period: int | None = None  # gracePeriodSeconds: None is the type's default, 0 at once
