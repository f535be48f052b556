"""Website sources: a crawl within a URL prefix, polite and guarded (docs/sources.md, "Websites").

* **SSRF**: every request -- the start page, robots.txt, every link and every redirect hop -- is to
  a host whose addresses are all public; private, loopback, link-local, multicast and reserved
  addresses are refused unless ``BULKHEAD_SOURCE_ALLOW_PRIVATE_ADDRESSES`` is on. The connection goes
  to the address that was checked (the host name is kept for the Host header and TLS), so a name
  that resolves differently on a second lookup cannot lead elsewhere.
* robots.txt is obeyed (user agent :data:`USER_AGENT`); requests are spaced by the source's rate.
* Conditional requests: a page's stored ETag / Last-Modified is sent; a 304 keeps it as it was.
* Every request has a timeout (``BULKHEAD_SOURCE_TIMEOUT_SECONDS``) for the whole answer, not only for each
  read, and a page is read up to one upload's bytes (``BULKHEAD_MAX_UPLOAD_BYTES``), decoded as it comes
  (:func:`_read_body`). A page that fails is an error of the sync and the listing is incomplete: nothing
  is deleted then.
* A crawl holds the pages it lists (a 304's stored bytes too) until the sync reads them: at most
  ``BULKHEAD_SOURCE_MAX_CRAWL_BYTES`` in all, else the listing fails naming it (nothing is synced or deleted).
* A preview gives the whole crawl one deadline (``BULKHEAD_SOURCE_PREVIEW_SECONDS``): no request outlasts it, and
  past it the crawl stops (:class:`OutOfTime`, saying how many pages it read). A sync has no such deadline.
"""

from __future__ import annotations

import time
import urllib.robotparser
import zlib
from dataclasses import dataclass
from html.parser import HTMLParser
from urllib.parse import urldefrag, urljoin, urlsplit, urlunsplit

import httpx
from django.conf import settings

from sources.addresses import check_url_host
from sources.entries import Entry, Listing, ListingError, OutOfTime, content_hash, out_of_time
from sources.models import Source

USER_AGENT = "BulkheadBot/1.0 (+docs/sources.md)"
MAX_REDIRECTS = 5
HTML_TYPES = ("text/html", "application/xhtml+xml")


@dataclass
class Response:
    url: str
    status: int
    headers: httpx.Headers
    content: bytes


_DECODERS = {"gzip": 16 + zlib.MAX_WBITS, "x-gzip": 16 + zlib.MAX_WBITS, "deflate": zlib.MAX_WBITS}


def _read_body(response: httpx.Response, url: str, deadline: float) -> bytes:
    """The answer's body, decoded, read as it comes: at most ``BULKHEAD_MAX_UPLOAD_BYTES`` (decoded) and until
    ``deadline`` (``time.monotonic()``), else a ListingError naming which (found attacking sources: a page was
    read whole and inflated without a bound -- 64 KB of gzip became 64 MB -- and one that drips a byte within
    every read timeout was read for as long as its site liked). An encoding other than gzip or deflate is refused."""
    limit = settings.BULKHEAD_MAX_UPLOAD_BYTES
    encoding = response.headers.get("content-encoding", "").strip().lower()
    decoder = None
    if encoding not in ("", "identity"):
        if encoding not in _DECODERS:
            raise ListingError(f"{url[:200]}: the content encoding {encoding[:40]!r} is not read")
        decoder = zlib.decompressobj(_DECODERS[encoding])
    body = bytearray()
    try:
        for raw in response.iter_raw():
            data = raw
            while data and len(body) <= limit:
                if decoder is None:
                    body += data
                    break
                body += decoder.decompress(data, limit + 1 - len(body))  # never more than one byte past the limit
                data = decoder.unconsumed_tail
            if len(body) > limit:
                raise ListingError(f"{url[:200]}: the page has more than {limit} bytes (BULKHEAD_MAX_UPLOAD_BYTES); "
                                   "it is not read")
            if time.monotonic() > deadline:
                raise ListingError(f"{url[:200]}: timed out")
    except zlib.error:
        raise ListingError(f"{url[:200]}: the {encoding} content could not be decoded") from None
    return bytes(body)


def safe_get(client: httpx.Client, url: str, headers: dict | None = None, until: float | None = None) -> Response:
    """GET ``url``, following redirects by hand, each hop checked as the first; each hop's answer within
    ``BULKHEAD_SOURCE_TIMEOUT_SECONDS`` in all (and before ``until``, ``time.monotonic()``, when given) and one
    upload's bytes (:func:`_read_body`). A failure after a redirect names the hop it failed at as the
    :class:`ListingError`'s ``path`` (:func:`_at_hop`)."""
    start = url
    for _ in range(MAX_REDIRECTS + 1):
        try:
            response = _get_once(client, url, headers, until)
        except ListingError as exc:
            raise _at_hop(exc, start, url) from None
        if isinstance(response, str):
            url = response
            continue
        return response
    raise _at_hop(ListingError(f"{url[:200]}: more than {MAX_REDIRECTS} redirects"), start, url)


def _at_hop(exc: ListingError, start: str, hop: str) -> ListingError:
    """``exc`` as the request for ``start`` fails: unchanged when it failed there; after a redirect, naming ``hop``
    as its ``path`` -- an address the site chose (a private page, a token in its query), named only to who may read
    it as a path of the source (docs/sources.md, "Who sees a source's paths") -- and, for the others, ``start``
    alone."""
    if hop == start:
        return exc
    return ListingError(f"{start[:200]}: redirected to {exc}", path=hop, listing=Listing([]),
                        without_path=f"{start[:200]}: redirected to an address you may not read, which failed")


def _get_once(client: httpx.Client, url: str, headers: dict | None, until: float | None) -> Response | str:
    """One request of :func:`safe_get`: its answer, or the URL a redirect leads to."""
    address = check_url_host(url)
    parts = urlsplit(url)
    host_header = parts.netloc.rsplit("@", 1)[-1]
    ip_host = f"[{address}]" if ":" in address else address
    netloc = ip_host + (f":{parts.port}" if parts.port else "")
    target = urlunsplit((parts.scheme, netloc, parts.path or "/", parts.query, ""))
    extensions = {"sni_hostname": parts.hostname} if parts.scheme == "https" else {}
    deadline = time.monotonic() + settings.BULKHEAD_SOURCE_TIMEOUT_SECONDS
    if until is not None:
        deadline = min(deadline, until)
    try:
        with client.stream("GET", target, extensions=extensions, timeout=max(deadline - time.monotonic(), 0.001),
                           headers={**(headers or {}), "Host": host_header, "User-Agent": USER_AGENT,
                                    "Accept-Encoding": "gzip, deflate"}) as response:
            if response.status_code in (301, 302, 303, 307, 308) and "location" in response.headers:
                return urljoin(url, response.headers["location"])
            return Response(url, response.status_code, response.headers, _read_body(response, url, deadline))
    except httpx.TimeoutException:
        raise ListingError(f"{url[:200]}: timed out") from None
    except httpx.HTTPError as exc:
        raise ListingError(f"{url[:200]}: {type(exc).__name__}") from None


class _Links(HTMLParser):
    def __init__(self):
        super().__init__()
        self.links: list[str] = []

    def handle_starttag(self, tag, attrs):
        if tag == "a":
            href = dict(attrs).get("href")
            if href:
                self.links.append(href)


def page_links(base: str, content: bytes) -> list[str]:
    parser = _Links()
    try:
        parser.feed(content.decode("utf-8", "replace"))
    except Exception:  # noqa: BLE001 - a broken page has no links to follow
        return []
    links = []
    for href in parser.links:
        try:
            links.append(urldefrag(urljoin(base, href))[0])
        except ValueError:
            # A link that is no URL ("http://[board-layoffs-2027]/": urllib's ValueError quotes it) is not followed
            # (fourteenth session: it failed the whole crawl, its text in the sync's error for every admin).
            continue
    return links


def sitemap_urls(content: bytes) -> list[str]:
    from lxml import etree

    try:
        root = etree.fromstring(content, parser=etree.XMLParser(resolve_entities=False, no_network=True))
    except etree.XMLSyntaxError:
        raise ListingError("the sitemap is not readable XML") from None
    return [el.text.strip() for el in root.iter() if isinstance(el.tag, str) and el.tag.endswith("loc") and el.text]


def _prefix(source: Source) -> str:
    prefix = (source.options or {}).get("prefix") or ""
    if prefix:
        return prefix
    start = source.url
    return start if start.endswith("/") else start.rsplit("/", 1)[0] + "/"


def crawl(source: Source, *, stored: dict, deadline: float | None = None) -> Listing:
    """Pages below the source's prefix reachable from its start URL (or listed by its sitemap); all of them
    before ``deadline`` (``time.monotonic()``, a preview's), else :class:`OutOfTime`. ``stored``: url -> (etag,
    last_modified, a function that loads the stored bytes), called only for a page the server answers 304."""
    options = source.options or {}
    rate = float(options.get("rate_per_second") or 2.0)
    max_pages = min(int(options.get("max_pages") or settings.BULKHEAD_SOURCE_MAX_FILES), settings.BULKHEAD_SOURCE_MAX_FILES)
    prefix = _prefix(source)
    entries: list[Entry] = []
    errors: list[dict] = []
    queue: list[str] = []
    seen: set[str] = set()
    last = [0.0]
    held, most = 0, settings.BULKHEAD_SOURCE_MAX_CRAWL_BYTES  # the bytes of the pages listed so far, held in memory

    def stopped() -> OutOfTime:
        return OutOfTime(f"after reading {len(entries)} of the {len(seen)} pages found so far")

    def polite_get(client, url, headers=None):
        wait = last[0] + 1.0 / rate - time.monotonic()
        if out_of_time(deadline) or (deadline is not None and wait > deadline - time.monotonic()):
            raise stopped()
        if wait > 0:
            time.sleep(wait)
        try:
            return safe_get(client, url, headers, until=deadline)
        except ListingError:
            if out_of_time(deadline):  # the request was cut short by the deadline: the crawl stops here
                raise stopped() from None
            raise
        finally:
            last[0] = time.monotonic()

    timeout = httpx.Timeout(settings.BULKHEAD_SOURCE_TIMEOUT_SECONDS)
    with httpx.Client(timeout=timeout, follow_redirects=False, trust_env=False) as client:
        robots = urllib.robotparser.RobotFileParser()
        origin = "{0.scheme}://{0.netloc}".format(urlsplit(source.url))
        answer = polite_get(client, origin + "/robots.txt")  # a start that cannot be reached fails here
        robots.parse(answer.content.decode("utf-8", "replace").splitlines() if answer.status == 200 else [])
        if source.url.endswith(".xml"):
            first = polite_get(client, source.url)
            if first.status != 200:
                raise ListingError(f"the sitemap answered {first.status}")
            queue = [u for u in sitemap_urls(first.content) if u.startswith(prefix)]
        else:
            queue = [source.url]
        seen.update(queue)
        while queue and len(entries) < max_pages:
            url = queue.pop(0)
            if not robots.can_fetch(USER_AGENT, url):
                continue
            before = stored.get(url)
            headers = {}
            if before:
                if before[0]:
                    headers["If-None-Match"] = before[0]
                if before[1]:
                    headers["If-Modified-Since"] = before[1]
            try:
                response = polite_get(client, url, headers)
            except OutOfTime:
                raise
            except ListingError as exc:
                if url == source.url and not entries:
                    raise
                # A redirect's hop it failed at (``exc.path``): who reads the error may read that address too.
                errors.append({"path": url, "error": str(exc), **({"hop": exc.path} if exc.path else {})})
                continue
            if not response.url.startswith(prefix):
                continue  # redirected out of the prefix: not this source's page
            if response.status == 304 and before:
                content = before[2]()
                entry = Entry(url, content_hash(content), lambda c=content: c,
                              etag=before[0], last_modified=before[1], not_modified=True)
            elif response.status == 200:
                content = response.content
                kind = response.headers.get("content-type", "").split(";")[0].strip().lower()
                entry = Entry(url, content_hash(content), lambda c=content: c, size=len(content),
                              etag=response.headers.get("etag", ""),
                              last_modified=response.headers.get("last-modified", ""), content_type=kind)
            elif response.status in (404, 410):
                continue  # gone: deleted if it was stored
            else:
                if url == source.url and not entries:
                    raise ListingError(f"the start page answered {response.status}")
                errors.append({"path": url, "error": f"the server answered {response.status}"})
                continue
            held += len(content)
            if held > most:
                # The page is a path of the source: named only to who may read it (ListingError.path).
                raise ListingError(f"the site's pages pass {most} bytes in all (BULKHEAD_SOURCE_MAX_CRAWL_BYTES) at "
                                   f"page {len(entries) + 1} ({url[:200]}); narrow the source (options.prefix, "
                                   "options.max_pages): nothing was synced or deleted", path=url,
                                   without_path=f"the site's pages pass {most} bytes in all "
                                                f"(BULKHEAD_SOURCE_MAX_CRAWL_BYTES) at page {len(entries) + 1} (a "
                                                "page you may not read); narrow the source (options.prefix, "
                                                "options.max_pages): nothing was synced or deleted",
                                   listing=Listing(list(entries), errors=list(errors)))
            entries.append(entry)
            if (entry.content_type or "text/html") in HTML_TYPES:
                for link in page_links(response.url, content):
                    if link.startswith(prefix) and link not in seen:
                        seen.add(link)
                        queue.append(link)
    return Listing(entries, complete=not errors and not queue, errors=errors)
