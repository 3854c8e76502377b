"""Which section of the console a page belongs to, so the navigation can mark it with
``aria-current="page"`` (the main nav) and the settings sub-navigation its own page."""

# (namespace, url name or "*") → main-nav section. Settings pages live in several apps.
_SECTIONS = {
    ("console", "dashboard"): "dashboard",
    ("agents", "*"): "agents",
    ("knowledge", "*"): "knowledge",
    ("runs", "chat"): "chat",
    ("runs", "conversation"): "chat",
    ("runs", "*"): "activity",
    ("approvals", "*"): "activity",
    ("spend", "*"): "spend",
    ("audit", "*"): "audit",
    ("notifications", "inbox"): "notifications",
    ("notifications", "preferences"): "settings",
    ("vault", "*"): "settings",
    ("memory", "*"): "settings",
    ("console", "*"): "settings",
}


def navigation(request):
    match = getattr(request, "resolver_match", None)
    if match is None:
        return {}
    namespace, name = match.namespace, match.url_name
    section = _SECTIONS.get((namespace, name)) or _SECTIONS.get((namespace, "*"), "")
    return {"nav_section": section, "nav_page": f"{namespace}:{name}"}
