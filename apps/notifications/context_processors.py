from .selectors import unread_count


def unread_notifications(request):
    """The count beside "Notifications" in the navigation: one indexed count per page."""
    user = getattr(request, "user", None)
    organization = getattr(request, "organization", None)
    if user is None or not user.is_authenticated or organization is None:
        return {}
    return {"unread_notifications": unread_count(user, organization)}
