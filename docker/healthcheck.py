"""Container healthcheck for the web role: GET /healthz must answer 200 (db, redis, worker ok).

Django checks the Host header, so the request names a host from ALLOWED_HOSTS (its first
entry; "localhost" when that is a wildcard or unset) instead of 127.0.0.1.
"""

import http.client
import os
import sys

hosts = [h.strip() for h in os.environ.get("ALLOWED_HOSTS", "").split(",") if h.strip()]
host = hosts[0].lstrip(".") if hosts else "localhost"
if not host or host == "*":
    host = "localhost"

try:
    connection = http.client.HTTPConnection("127.0.0.1", 8000, timeout=5)
    connection.request("GET", "/healthz", headers={"Host": host})
    response = connection.getresponse()
    body = response.read(500).decode(errors="replace")
except OSError as exc:
    print(f"healthz unreachable: {exc}")
    sys.exit(1)
print(response.status, body)
sys.exit(0 if response.status == 200 else 1)
