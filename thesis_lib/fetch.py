"""Fetch one URL to a file: streamed to ``<dest>.part``, hashed on the way, renamed to ``dest`` when complete.

    size, sha256 = fetch("https://dl.fbaipublicfiles.com/fairseq/data2vec2/dict.txt", ckpt / "dict.txt")

A ``dest`` that exists is complete (only a finished transfer is renamed to it) and is not downloaded again. A failed
or cut-off transfer leaves no ``dest``; the bytes it got stay in ``<dest>.part``, and the next fetch asks the server
for the rest only (HTTP ``Range``; a server that ignores it sends the whole file, fetched afresh). ``HF_TOKEN``, where
set, is sent to the Hugging Face hub. Progress goes to stderr (MB done, MB/s) at most every few
seconds, unless ``THESIS_PROGRESS=0``.

``THESIS_MIRROR`` (a local folder, or an ``http(s)://`` / ``file://`` URL base): when set, every URL is fetched from
``$THESIS_MIRROR/<the URL's file name>`` instead (the last component of its path, without the query string), for a
lab's own mirror and for the tests. ``fetch(..., mirror=False)`` reads the URL itself, or a local file when it is a
path (a file named for one download, ``--source`` of ``python -m thesis_lib.data.download``). Every failure is a
``DownloadError`` naming the URL and, for HTTP, the status (with Azure's error code where the server sends one, e.g.
``409 PublicAccessNotPermitted``).
"""
from __future__ import annotations

import hashlib
import http.client
import os
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from urllib.parse import quote, unquote, urlsplit

from .errors import DownloadError
from .paths import show_progress

MIRROR = "THESIS_MIRROR"
CHUNK = 1 << 20
EVERY_S = 5.0                 # seconds between two progress lines
TIMEOUT_S = 60.0              # a connection that stays silent this long fails
AGENT = "thesis_lib-fetch/1"  # some hosts refuse urllib's default agent


def say(line: str) -> None:
    if show_progress():
        print(line, file=sys.stderr, flush=True)


def file_name(url: str) -> str:
    """The last component of the URL's path, without the query string (``…/x.pth?sig=…`` → ``x.pth``)."""
    name = unquote(urlsplit(url).path.rstrip("/").rpartition("/")[2])
    if not name:
        raise DownloadError(f"{url} names no file (its path is empty)")
    return name


def source(url: str) -> str:
    """Where ``url`` is read from: itself, or its file in ``$THESIS_MIRROR`` (a local path or a URL)."""
    base = os.environ.get(MIRROR, "").strip()
    if not base:
        return url
    if "://" in base:
        return f"{base.rstrip('/')}/{quote(file_name(url))}"
    return str(Path(base) / file_name(url))


def file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(CHUNK):
            h.update(block)
    return h.hexdigest()


HF_HOSTS = ("huggingface.co", "hf.co")
TOKEN = "HF_TOKEN"     # a Hugging Face token, sent to the hub (gated or rate-limited files) where one is set


def request(src: str, offset: int = 0, env=None) -> urllib.request.Request:
    """The HTTP request for ``src``: from byte ``offset`` on (``Range: bytes=N-``) when a ``.part`` holds the bytes
    before it; with ``Authorization: Bearer $HF_TOKEN`` when ``src`` is on the Hugging Face hub and the token is set
    (not passed on to where the hub redirects: its CDN's links are signed)."""
    ranged = {"Range": f"bytes={offset}-"} if offset else {}
    req = urllib.request.Request(src, headers={"User-Agent": AGENT, **ranged})
    host, token = (urlsplit(src).hostname or "").lower(), (os.environ if env is None else env).get(TOKEN, "").strip()
    if token and any(host == h or host.endswith("." + h) for h in HF_HOSTS):
        req.add_unredirected_header("Authorization", f"Bearer {token}")
    return req


def _open(url: str, src: str, timeout: float, offset: int = 0):
    """The stream to read, the file's whole length in bytes (None when the server does not say) and the byte the
    stream starts at: ``offset`` where the source continues there (a local file, an HTTP 206), else 0 (a server that
    ignores the range, or answers 416, sends the whole file)."""
    where = url if src == url else f"{url} (from the mirror: {src})"
    if "://" not in src:                                              # a local mirror folder, or a local file
        path = Path(src).expanduser()
        if not path.is_file() and src == url:
            raise DownloadError(f"{url}: not found (404): no such file")
        if not path.is_file():
            raise DownloadError(f"{where}: not found (404): the mirror {os.environ.get(MIRROR)} has no "
                                f"{path.name}; put the file there or unset {MIRROR}")
        size = path.stat().st_size
        stream = open(path, "rb")
        stream.seek(offset if offset < size else 0)
        return stream, size, stream.tell()
    try:
        resp = urllib.request.urlopen(request(src, offset), timeout=timeout)
    except urllib.error.HTTPError as err:
        if err.code == 416 and offset:                                # the part is not a prefix it can continue
            return _open(url, src, timeout, 0)
        code = err.headers.get("x-ms-error-code") if err.headers else None
        raise DownloadError(f"{where}: HTTP {err.code} {code or err.reason}") from None
    except (urllib.error.URLError, OSError, http.client.HTTPException) as err:
        reason = getattr(err, "reason", err)
        raise DownloadError(f"{where}: cannot be read ({reason}); check the address and the network") from None
    length = resp.headers.get("Content-Length") if resp.headers else None
    length = int(length) if length and length.isdigit() else None
    whole = (resp.headers.get("Content-Range") or "").rpartition("/")[2] if resp.status == 206 else ""
    if resp.status == 206 and offset:
        return resp, int(whole) if whole.isdigit() else (offset + length if length is not None else None), offset
    return resp, length, 0


def _progress(name: str, done: int, total: int | None, seconds: float) -> str:
    of = f" / {total / 1e6:,.1f}" if total else ""
    return f"  {name}: {done / 1e6:,.1f}{of} MB, {done / 1e6 / max(seconds, 1e-9):,.1f} MB/s"


def fetch(url: str, dest: str | os.PathLike, every: float = EVERY_S, timeout: float = TIMEOUT_S,
          mirror: bool = True) -> tuple[int, str]:
    """Download ``url`` to ``dest`` (see the module's docstring); returns the file's size and SHA-256. ``mirror``:
    ``THESIS_MIRROR`` applies (else ``url`` itself is read: a URL, or a local file's path). A transfer cut off
    leaves ``<dest>.part`` (and ``<dest>.part.from``, its source); the next fetch of ``dest`` from the same source
    asks only for the rest (``Range: bytes=N-``), and starts afresh where the server sends the whole file."""
    dest = Path(dest)
    if dest.is_file():
        return dest.stat().st_size, file_sha256(dest)
    src = source(url) if mirror else url
    dest.parent.mkdir(parents=True, exist_ok=True)
    part, origin = dest.with_name(dest.name + ".part"), dest.with_name(dest.name + ".part.from")
    h, done, start = hashlib.sha256(), 0, time.monotonic()
    try:
        ours = part.is_file() and origin.is_file() and origin.read_text() == src    # not another link's part
        stream, total, done = _open(url, src, timeout, part.stat().st_size if ours else 0)
        origin.write_text(src)
        say(f"fetch {url}" + (f" (from {src})" if src != url else "") + f" -> {dest}"
            + (f", continuing at byte {done:,}" if done else ""))
        if done:
            with open(part, "rb") as kept:
                while block := kept.read(CHUNK):
                    h.update(block)
        last = time.monotonic()
        with stream, open(part, "ab" if done else "wb") as out:
            while block := stream.read(CHUNK):
                out.write(block)
                h.update(block)
                done += len(block)
                if time.monotonic() - last >= every:
                    last = time.monotonic()
                    say(_progress(dest.name, done, total, last - start))
        if total is not None and done != total:
            raise DownloadError(f"{url}: cut off after {done:,} of {total:,} bytes; run again to continue it")
        os.replace(part, dest)
    except (OSError, http.client.HTTPException) as err:      # the connection dropped mid-transfer, a full disk
        raise DownloadError(f"{url}: the transfer failed after {done:,} bytes ({err}); run again to continue "
                            "it") from None
    finally:
        if not (part.is_file() and part.stat().st_size):      # kept to be continued: a part that holds bytes
            part.unlink(missing_ok=True)
            origin.unlink(missing_ok=True)
    say(_progress(dest.name, done, total, time.monotonic() - start) + " (done)")
    return done, h.hexdigest()
