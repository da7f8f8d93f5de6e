"""The OpenAPI string formats a CRD schema may name, checked as kube-openapi's strfmt registry checks them."""

from __future__ import annotations

import ipaddress
import re
import unicodedata
from collections.abc import Callable
from datetime import date

from kcp_apiserver.apiextensions.goregexp import linear_regexp

_UUID = re.compile(r"[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}", re.IGNORECASE)
_UUID3 = re.compile(r"[0-9a-f]{8}-?[0-9a-f]{4}-?3[0-9a-f]{3}-?[0-9a-f]{4}-?[0-9a-f]{12}", re.IGNORECASE)
_UUID4 = re.compile(r"[0-9a-f]{8}-?[0-9a-f]{4}-?4[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}", re.IGNORECASE)
_UUID5 = re.compile(r"[0-9a-f]{8}-?[0-9a-f]{4}-?5[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}", re.IGNORECASE)
_BASE64 = re.compile(r"(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=|[A-Za-z0-9+/]{4})")
_HEXCOLOR = re.compile(r"#?(?:[0-9a-fA-F]{3}|[0-9a-fA-F]{6})")
_OCTET = r"(?:0|[1-9][0-9]?|1[0-9][0-9]?|2[0-4][0-9]|25[0-5])"
_RGB = re.compile(rf"rgb\([ \t\n\f\r]*{_OCTET}[ \t\n\f\r]*,[ \t\n\f\r]*{_OCTET}[ \t\n\f\r]*,"
                  rf"[ \t\n\f\r]*{_OCTET}[ \t\n\f\r]*\)")
_SSN = re.compile(r"[0-9]{3}[- ]?[0-9]{2}[- ]?[0-9]{4}")
_CREDITCARD = re.compile(r"4[0-9]{12}(?:[0-9]{3})?|5[1-5][0-9]{14}|6(?:011|5[0-9][0-9])[0-9]{12}|3[47][0-9]{13}|"
                         r"3(?:0[0-5]|[68][0-9])[0-9]{11}|(?:2131|1800|35[0-9]{3})[0-9]{11}")
_DATE = re.compile(r"([0-9]{4})-([0-9]{2})-([0-9]{2})")
_TIME = re.compile(r"([0-9]{2}):([0-9]{2}):([0-9]{2})(.[0-9]+)?(z|[+-][0-9]{2}:[0-9]{2})")
_GO_DURATION = re.compile(r"[-+]?(?:0|(?:(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:ns|us|\u00b5s|\u03bcs|ms|s|m|h))+)")
_SCALA_DURATION = re.compile("[ \t\n\f\r]*(?:[0-9]+[ \t\n\f\r]*[A-Za-z\u00b5]+[ \t\n\f\r]*)+")
_SCALA_PART = re.compile("([0-9]+)[ \t\n\f\r]*([A-Za-z\u00b5]+)")
_DURATION_UNITS = (("ns", "nano"), ("us", "\u00b5s", "micro"), ("ms", "milli"), ("s", "sec"), ("m", "min"),
                   ("h", "hr", "hour"), ("d", "day"), ("w", "wk", "week"))
_HOST_CLASS = "a-zA-Z0-9$"  # non-ASCII letters and symbols are mapped onto 'a' and '$' first
_HOSTNAME = re.compile(rf"[{_HOST_CLASS}](?:-?[{_HOST_CLASS}]{{0,62}})?|"
                       rf"(?:[{_HOST_CLASS}](?:[{_HOST_CLASS}-]{{0,61}}[{_HOST_CLASS}])?\.)+[a-zA-Z]{{2,63}}")
_ATEXT = "A-Za-z0-9!#$%&'*+\\-/=?^_`{|}~\u0080-\U0010ffff"
_ADDR_SPEC = (rf"(?:[{_ATEXT}]+(?:\.[{_ATEXT}]+)*|\"(?:[^\"\\\r\n]|\\.)*\")"
              rf"@(?:[{_ATEXT}]+(?:\.[{_ATEXT}]+)*|\[[^\[\]\\]*\])")
# `(?:[...]+|...)*` backtracks exponentially in Python's re on `a-a-a-...!`; RE2 answers in linear time.
_EMAIL = linear_regexp(rf"[ \t]*(?:{_ADDR_SPEC}|(?:[{_ATEXT} \t.]+|\"(?:[^\"\\\r\n]|\\.)*\")*[ \t]*<{_ADDR_SPEC}>)[ \t]*")
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*:")
_BAD_ESCAPE = re.compile(r"%(?![0-9A-Fa-f]{2})")
_HOST_FORBIDDEN = re.compile(r"[ \"#%<>\\^`{|}]")


def _full(pattern: re.Pattern[str]) -> Callable[[str], bool]:
    return lambda s: pattern.fullmatch(s) is not None


def _is_date(s: str) -> bool:
    m = _DATE.fullmatch(s)
    if m is None:
        return False
    try:
        date(int(m[1]), int(m[2]), int(m[3]))
    except ValueError:
        return False
    return True


def _is_datetime(s: str) -> bool:
    parts = s.lower().split("t")
    if len(s) < 4 or len(parts) < 2 or not _is_date(parts[0]):
        return False
    m = _TIME.match(parts[1])
    return m is not None and m.end() == len(parts[1]) and m[1] <= "23" and m[2] <= "59" and m[3] <= "59"


def _is_duration(s: str) -> bool:
    if _GO_DURATION.fullmatch(s):
        return True
    if not _SCALA_DURATION.fullmatch(s):
        return False
    for _, unit in _SCALA_PART.findall(s):
        unit = unit.lower()
        for variants in _DURATION_UNITS:
            if unit.startswith(variants[-1]) or any(unit == v for v in variants):
                return True
    return False


def _ipv4_sloppy(s: str) -> bool:
    """net.ParseIP as Go < 1.17 did it: leading zeros allowed."""
    parts = s.split(".")
    return len(parts) == 4 and all(p.isascii() and p.isdigit() and int(p) <= 255 for p in parts)


def _strip_zeros(s: str) -> str:
    head, _, tail = s.rpartition(":")
    if "." in tail and _ipv4_sloppy(tail):
        tail = ".".join(str(int(p)) for p in tail.split("."))
    return f"{head}:{tail}" if head or s.startswith(":") else tail


def _parse_ip(s: str, sloppy: bool) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    if "%" in s or not s.isascii():
        return None
    if sloppy:
        if _ipv4_sloppy(s):
            return ipaddress.IPv4Address(".".join(str(int(p)) for p in s.split(".")))
        if ":" in s:
            s = _strip_zeros(s)
    try:
        return ipaddress.ip_address(s)
    except ValueError:
        return None


def _is_cidr(s: str) -> bool:
    addr, slash, bits = s.partition("/")
    ip = _parse_ip(addr, sloppy=True)
    if not slash or ip is None or not (bits.isascii() and bits.isdigit()):
        return False
    return int(bits) <= (32 if _ipv4_sloppy(addr) else 128)


def _is_mac(s: str) -> bool:
    """net.ParseMAC: 6, 8 or 20 octets as `xx:xx`, `xx-xx` or `xxxx.xxxx`."""
    if len(s) < 14 or not s.isascii():
        return False
    if s[2] in ":-":
        groups = s.split(s[2])
        size = 2
    elif s[4] == ".":
        groups = s.split(".")
        size = 4
    else:
        return False
    octets = len(groups) * size // 2
    return octets in (6, 8, 20) and all(len(g) == size and all(c in "0123456789abcdefABCDEF" for c in g)
                                        for g in groups)


def _is_hostname(s: str) -> bool:
    mapped = "".join(c if c.isascii() else "a" if unicodedata.category(c)[0] == "L"
                     else "$" if unicodedata.category(c)[0] == "S" else "!" for c in s)
    mapped = "".join("$" if c in "+<=>^`|~" else c for c in mapped)
    if _HOSTNAME.fullmatch(mapped) is None or len(s.encode()) > 255:
        return False
    return all(len(label.encode()) <= 63 for label in s.split("."))


def _is_request_uri(s: str) -> bool:
    """url.ParseRequestURI: an absolute URI or an absolute path."""
    if not s or any(ord(c) < 0x20 or ord(c) == 0x7F for c in s):
        return False
    if s == "*":
        return True
    m = _SCHEME.match(s)
    if m is None and s.startswith(":"):
        return False
    scheme, rest = (s[:m.end() - 1], s[m.end():]) if m else ("", s)
    rest = rest.split("?", 1)[0]
    if not rest.startswith("/"):
        return bool(scheme)
    if scheme and rest.startswith("//"):
        authority, _, rest = rest[2:].partition("/")
        host = authority.rpartition("@")[2]
        if host.startswith("["):
            end = host.find("]")
            if end < 0:
                return False
            port = host[end + 1:]
            if port and not ((port[0] == ":" and port[1:].isdigit()) or port == ":"):
                return False
        elif ":" in host:
            port = host.rpartition(":")[2]
            if port and not (port.isascii() and port.isdigit()):
                return False
        if _HOST_FORBIDDEN.search(host.replace("%", "")) or _BAD_ESCAPE.search(authority):
            return False
    return _BAD_ESCAPE.search(rest) is None


def _is_email(s: str) -> bool:
    return _EMAIL.fullmatch(s) and "@" in s


def _isbn10(s: str) -> bool:
    s = re.sub(r"[\s-]+", "", s)
    if not re.fullmatch(r"[0-9]{9}X|[0-9]{10}", s):
        return False
    total = sum((i + 1) * int(c) for i, c in enumerate(s[:9])) + 10 * (10 if s[9] == "X" else int(s[9]))
    return total % 11 == 0


def _isbn13(s: str) -> bool:
    s = re.sub(r"[\s-]+", "", s)
    if not re.fullmatch(r"[0-9]{13}", s):
        return False
    total = sum((1, 3)[i % 2] * int(c) for i, c in enumerate(s[:12]))
    return int(s[12]) == (10 - total % 10) % 10


def _is_creditcard(s: str) -> bool:
    s = re.sub(r"[^0-9]+", "", s)
    if not _CREDITCARD.fullmatch(s):
        return False
    total = 0
    for i, c in enumerate(reversed(s)):
        n = int(c) * (2 if i % 2 else 1)
        total += n - 9 if n >= 10 else n
    return total % 10 == 0


FORMATS: dict[str, Callable[[str], bool]] = {
    "bsonobjectid": lambda s: len(s) == 24 and all(c in "0123456789abcdefABCDEF" for c in s),
    "uri": _is_request_uri,
    "email": _is_email,
    "hostname": _is_hostname,
    "ipv4": lambda s: "." in s and _parse_ip(s, sloppy=True) is not None,
    "ipv6": lambda s: ":" in s and _parse_ip(s, sloppy=False) is not None,
    "cidr": _is_cidr,
    "mac": _is_mac,
    "uuid": _full(_UUID),
    "uuid3": _full(_UUID3),
    "uuid4": _full(_UUID4),
    "uuid5": _full(_UUID5),
    "isbn": lambda s: _isbn10(s) or _isbn13(s),
    "isbn10": _isbn10,
    "isbn13": _isbn13,
    "creditcard": _is_creditcard,
    "ssn": lambda s: len(s) == 11 and _SSN.fullmatch(s) is not None,
    "hexcolor": _full(_HEXCOLOR),
    "rgbcolor": _full(_RGB),
    "byte": _full(_BASE64),
    "password": lambda s: True,
    "date": _is_date,
    "duration": _is_duration,
    "datetime": _is_datetime,
}
"""kube's supported CRD formats, keyed by name without dashes; any other format (int32, int64, float,
double, ...) is stripped by kube before validation and so ignored here."""
