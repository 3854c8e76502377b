"""Where this deployment may connect to: the one check for every URL an organization chose.

An organization types URLs that the deployment then dials from inside its own network: a model
profile's ``base_url`` (with a vault key in the request), an embedding endpoint, an MCP server, a
Mattermost server, a self-hosted mem0; and the model itself asks ``web_fetch`` for URLs. Each of
those is a way to make the deployment's web process or worker reach an address the person typing
could not reach themselves — the cloud's metadata service (which hands out the machine's
credentials), a database on 10.0.0.0/8, an admin port on 127.0.0.1 — and, where a key travels
with the request, to hand that key to whoever listens there.

So there is one answer, here, to "may this URL be dialled", and one way to dial it:

- :mod:`.addresses` parses the URL (a malformed one is a refusal with a sentence, never a
  ``ValueError`` somewhere else), resolves its host, and judges every address it resolved to:
  never a cloud metadata address; never a private, loopback, link-local, unspecified or reserved
  one unless the operator's allow-list (``OUTBOUND_ALLOW``, :mod:`.allowlist`) names it.
- :mod:`.clients` makes httpx clients whose transport does that same check on every request it
  sends (redirects included) and then *pins* the connection to the address it just judged, so a
  name that resolved to a public address when it was saved cannot lead to 169.254.169.254 when it
  is dialled (DNS can change between the two, on purpose).

A plain package, not a Django app: it has no models, templates or signals, so it needs no
AppConfig and no ``INSTALLED_APPS`` line. It is on the ground floor: it imports no product app,
and every app that dials a URL imports it. ``docs/security.md`` ("Where the product dials") lists
every dial site and the check each uses.
"""
