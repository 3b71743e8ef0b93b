"""Endpoint URLs with their secrets masked, for anything that is stored or printed.

A base URL may carry credentials (`http://user:pass@host/v1`, `?api_key=…`). The real URL
stays in memory for the client; run settings, events, error messages and `kimmy show` see
`redact_url(url)` only.
"""

from __future__ import annotations

from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

MASK = "***"


def redact_url(url: str) -> str:
    """`url` with its user info and every query-string value replaced by `***`.

    Query values are all masked (not only names that look secret): a token's parameter
    name is the server's choice, and a base URL has no other reason to carry a query.
    A string that does not parse as a URL is masked whole if it holds an `@` or a `?`
    (it might still hold a secret), else returned unchanged.

    Example: `redact_url("http://u:p@host/v1?api_key=k")` → `"http://***@host/v1?api_key=***"`.
    """
    try:
        parts = urlsplit(url)
    except ValueError:
        return MASK if "@" in url or "?" in url else url
    netloc = parts.netloc
    if "@" in netloc:
        netloc = MASK + "@" + netloc.rpartition("@")[2]
    query = parts.query
    if query:
        pairs = parse_qsl(query, keep_blank_values=True)
        query = urlencode([(name, MASK) for name, _ in pairs], safe="*") if pairs else MASK
    fragment = MASK if parts.fragment else ""
    return urlunsplit((parts.scheme, netloc, parts.path, query, fragment))
