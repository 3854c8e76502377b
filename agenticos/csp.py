"""The Content-Security-Policy header on every response (docs/security.md).

The console is server-rendered templates with the project's own static scripts (and Django's
admin, whose scripts are static files too), so the policy runs scripts from this origin only: no
inline script, no ``eval``, no other host. An injected ``<script>`` in a run's output, a capability
config or an agent's name would not run. Websockets go back to this host (``connect-src``).

The API docs page (Swagger UI from the installed sidecar) keeps one inline ``<style>`` block of
its own template, so that page alone also allows inline styles; scripts stay 'self' there too.
Django 5.2 has no CSP support of its own (6.0 adds it); this is the whole of ours.
"""

from __future__ import annotations

from django.conf import settings

HEADER = "Content-Security-Policy"


def _policy(request, *, inline_styles: bool) -> str:
    host = request.get_host()
    directives = {
        "default-src": "'self'",
        "script-src": "'self'",
        "style-src": "'self' 'unsafe-inline'" if inline_styles else "'self'",
        # Charts are inline SVG; Swagger UI draws its icons from data: URIs.
        "img-src": "'self' data:",
        "font-src": "'self'",
        "connect-src": f"'self' ws://{host} wss://{host}",
        "object-src": "'none'",
        "base-uri": "'self'",
        "form-action": "'self'",
        "frame-ancestors": "'none'",
    }
    return "; ".join(f"{name} {value}" for name, value in directives.items())


class ContentSecurityPolicyMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        if settings.CSP_ENABLED and HEADER not in response:
            inline_styles = request.path.startswith(settings.CSP_INLINE_STYLE_PATHS)
            header = HEADER + ("-Report-Only" if settings.CSP_REPORT_ONLY else "")
            response[header] = _policy(request, inline_styles=inline_styles)
        return response
