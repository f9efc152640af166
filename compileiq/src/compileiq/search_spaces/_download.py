"""HTTP downloads of release files: a timeout on every socket operation, a size cap, .part then rename.

Only the standard library is used, so resolving a space adds no dependency. A file is verified
size first (cheap, and it catches a truncated transfer) and sha256 second; a file that fails either
check is deleted, never left where the cache would find it.
"""

from __future__ import annotations

import hashlib
import http.client
import socket
import urllib.error
import urllib.request
from pathlib import Path

from .. import _env
from .errors import SpaceDownloadError, SpaceIntegrityError
from ..utils.fs import atomic_write

CHUNK = 64 * 1024
_FIX = ("check the network or proxy, raise CIQ_DOWNLOAD_TIMEOUT, or use an offline mirror "
        "(CIQ_SEARCH_SPACES_DIR) or the shipped spaces (unset CIQ_SEARCH_SPACES_URL)")


def fetch(url: str, limit: int) -> bytes:
    """The body of ``url`` (at most ``limit`` bytes), or SpaceDownloadError naming the URL and the fix."""
    timeout = _env.download_timeout()
    req = urllib.request.Request(url, headers={"User-Agent": "compileiq"})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:  # noqa: S310 - http(s) only, checked in _env
            chunks, total = [], 0
            while True:
                block = resp.read(CHUNK)
                if not block:
                    break
                total += len(block)
                if total > limit:
                    raise SpaceIntegrityError(f"{url}: more than {limit:,} bytes, larger than the manifest allows; "
                                              "the release is damaged or the URL is wrong")
                chunks.append(block)
            return b"".join(chunks)
    except urllib.error.HTTPError as exc:
        raise SpaceDownloadError(f"{url}: HTTP {exc.code} {exc.reason}; check CIQ_SEARCH_SPACES_URL and the tag "
                                 f"(the release must hold this file), or {_FIX}") from None
    except http.client.IncompleteRead as exc:
        raise SpaceIntegrityError(f"{url}: the transfer stopped after {len(exc.partial):,} bytes (truncated); "
                                  f"retry, or {_FIX}") from None
    except (TimeoutError, socket.timeout):
        raise SpaceDownloadError(f"{url}: no answer within {timeout:g} s (CIQ_DOWNLOAD_TIMEOUT); {_FIX}") from None
    except urllib.error.URLError as exc:
        reason = exc.reason
        if isinstance(reason, (TimeoutError, socket.timeout)):
            raise SpaceDownloadError(f"{url}: no answer within {timeout:g} s (CIQ_DOWNLOAD_TIMEOUT); {_FIX}") from None
        raise SpaceDownloadError(f"{url}: cannot connect ({reason}); {_FIX}") from None
    except (ConnectionError, http.client.HTTPException, OSError) as exc:
        raise SpaceDownloadError(f"{url}: the download failed ({type(exc).__name__}: {exc}); {_FIX}") from None


def verify(data: bytes, size: int, sha256: str, what: str) -> None:
    """Size first, then sha256; the message names both values and what to do."""
    if len(data) != size:
        raise SpaceIntegrityError(f"{what}: {len(data):,} bytes where the manifest says {size:,} "
                                  f"({'truncated' if len(data) < size else 'too long'}); the copy is damaged: "
                                  "download it again (a bad cached copy is deleted automatically) or fix the mirror")
    digest = hashlib.sha256(data).hexdigest()
    if digest != sha256:
        raise SpaceIntegrityError(f"{what}: sha256 {digest[:16]}... does not match the manifest's {sha256[:16]}...; "
                                  "the file was changed or corrupted: download it again, or regenerate the mirror's "
                                  "manifest if you edited the file on purpose")


def write_atomic(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, data)


def download_verified(url: str, dest: Path, size: int, sha256: str) -> None:
    """Fetch ``url`` into ``dest`` only if it matches ``size`` and ``sha256``; nothing is left otherwise."""
    data = fetch(url, limit=size)
    verify(data, size, sha256, url)
    write_atomic(dest, data)


__all__ = ["fetch", "verify", "write_atomic", "download_verified", "CHUNK"]
