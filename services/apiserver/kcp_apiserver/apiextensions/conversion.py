"""spec.conversion as kube validates it (in its internal form): the strategy, the webhook's URL or
service, and the ConversionReview versions it speaks."""

from __future__ import annotations

from urllib.parse import urlsplit

from kcp_apiserver.apiextensions.fields import Obj, enum_value, get, get_str, validate_dns1035_label
from kcp_apiserver.apimachinery.status import Cause
from kcp_apiserver.apimachinery.validation import forbidden, invalid, required, validate_dns_subdomain

NONE_CONVERTER = "None"
WEBHOOK_CONVERTER = "Webhook"
CONVERSION_REVIEW_VERSIONS = ("v1", "v1beta1")


_URL_FORM = "; desired format: https://host[/path]"


def _validate_webhook_url(url: str, path: str) -> list[Cause]:
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises on a malformed port, as Go's url.Parse does
    except ValueError as exc:
        return [required(path, f"url must be a valid URL: {exc}{_URL_FORM}")]
    causes = []
    if parts.scheme != "https":
        causes.append(invalid(path, parts.scheme, "'https' is the only allowed URL scheme" + _URL_FORM))
    host = parts.netloc.rpartition("@")[2]
    if not host:
        causes.append(invalid(path, host, "host must be specified" + _URL_FORM))
    if "@" in parts.netloc:
        causes.append(invalid(path, parts.netloc.rpartition("@")[0], "user information is not permitted in the URL"))
    if parts.fragment:
        causes.append(invalid(path, parts.fragment, "fragments are not permitted in the URL"))
    if parts.query:
        causes.append(invalid(path, parts.query, "query parameters are not permitted in the URL"))
    return causes


def _validate_webhook_service(service: Obj, path: str) -> list[Cause]:
    causes = []
    if not get_str(service, "name"):
        causes.append(required(f"{path}.name", "service name is required"))
    if not get_str(service, "namespace"):
        causes.append(required(f"{path}.namespace", "service namespace is required"))
    port = get(service, "port")
    port = 443 if port is None else int(port)
    if not 1 <= port <= 65535:
        causes.append(invalid(f"{path}.port", port, "port is not valid: must be between 1 and 65535, inclusive"))
    url_path = get(service, "path")
    if url_path is None or url_path in ("", "/"):
        return causes
    if url_path == "//":
        return [*causes, invalid(f"{path}.path", url_path, "segment[0] may not be empty")]
    if not url_path.startswith("/"):
        causes.append(invalid(f"{path}.path", url_path, "must start with a '/'"))
    check = url_path[1:].removesuffix("/")
    for i, step in enumerate(check.split("/")):
        if not step:
            causes.append(invalid(f"{path}.path", url_path, f"segment[{i}] may not be empty"))
            continue
        causes += [invalid(f"{path}.path", url_path, f"segment[{i}]: {msg}") for msg in validate_dns_subdomain(step)]
    return causes


def validate_conversion(conversion: Obj | None, path: str, *, require_recognized_review_version: bool = True,
                        ) -> list[Cause]:
    """The internal conversion; an update may keep review versions the stored CRD already has."""
    if conversion is None:
        return []
    strategy = conversion["strategy"]
    causes = enum_value(f"{path}.strategy", strategy, (NONE_CONVERTER, WEBHOOK_CONVERTER))
    client = conversion["webhookClientConfig"]
    review = conversion["conversionReviewVersions"]
    if strategy == WEBHOOK_CONVERTER:
        cpath = f"{path}.webhookClientConfig"
        if client is None:
            causes.append(required(cpath, "required when strategy is set to Webhook"))
        else:
            url, service = get(client, "url"), get(client, "service")
            if (url is None) == (service is None):
                causes.append(required(cpath, "exactly one of url or service is required"))
            elif url is not None:
                causes += _validate_webhook_url(url, f"{cpath}.url")
            else:
                causes += _validate_webhook_service(service, f"{cpath}.service")
        rpath = f"{path}.conversionReviewVersions"
        if not review:
            causes.append(required(rpath))
        else:
            seen: set[str] = set()
            for i, version in enumerate(review):
                if version in seen:
                    causes.append(invalid(f"{rpath}[{i}]", version, "duplicate version"))
                    continue
                seen.add(version)
                causes += [invalid(f"{rpath}[{i}]", version, msg) for msg in validate_dns1035_label(version)]
            if require_recognized_review_version and not seen & set(CONVERSION_REVIEW_VERSIONS):
                causes.append(invalid(rpath, review,
                                      f"must include at least one of {', '.join(CONVERSION_REVIEW_VERSIONS)}"))
    else:
        if client is not None:
            causes.append(forbidden(f"{path}.webhookClientConfig", "should not be set when strategy is not set to "
                                                                   "Webhook"))
        if review:
            causes.append(forbidden(f"{path}.conversionReviewVersions", "should not be set when strategy is not "
                                                                        "set to Webhook"))
    return causes
