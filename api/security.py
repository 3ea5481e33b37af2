"""The headers every response carries, whatever serves it (API, docs, the web client).

The policy allows scripts from this origin only (no inline script, no eval), so markup an
attacker slips into a page cannot run; styles may be inline (UI libraries set them); images
also from data: and blob: URLs (pasted and previewed pictures); fetches and WebSockets to this
origin only (`connect-src 'self'` covers same-origin ws:// and wss:// in current browsers);
no plugins, no <base>, no framing by other sites, forms posting only here. Browsers too old
for `frame-ancestors` read `X-Frame-Options: DENY` instead.

A view may set a stricter policy of its own (an image is served with `default-src 'none';
sandbox`): the app-wide header is added only where a response has none.
"""

from __future__ import annotations

from flask import Flask, Response

CONTENT_SECURITY_POLICY = "; ".join(
    (
        "default-src 'self'",
        "script-src 'self'",
        "style-src 'self' 'unsafe-inline'",
        "img-src 'self' data: blob:",
        "connect-src 'self'",
        "font-src 'self'",
        "object-src 'none'",
        "base-uri 'none'",
        "frame-ancestors 'none'",
        "form-action 'self'",
    )
)
SECURITY_HEADERS = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
    "X-Frame-Options": "DENY",
}


def register_security_headers(app: Flask) -> None:
    @app.after_request
    def security_headers(response: Response) -> Response:
        for name, value in SECURITY_HEADERS.items():
            response.headers.setdefault(name, value)  # a view's own (stricter) value stays
        return response
