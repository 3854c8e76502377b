"""API routes of this app (included under /api/v1/ by agenticos/api_urls.py)."""

urlpatterns: list = []
