from .permissions import ALL_PERMISSIONS, has_org_permission
from .selectors import organizations_for_user


class _Permissions:
    """Template access as ``{% if perms_org.budgets_manage %}``; evaluated lazily per name."""

    def __init__(self, user, organization):
        self._user, self._organization = user, organization

    def __getattr__(self, name: str) -> bool:
        permission = name.replace("_", ":", 1)
        if permission not in ALL_PERMISSIONS:
            raise AttributeError(name)
        return has_org_permission(self._user, self._organization, permission)


def organization(request):
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        return {}
    current = getattr(request, "organization", None)
    return {
        "current_organization": current,
        "my_organizations": organizations_for_user(user).order_by("name"),
        "perms_org": _Permissions(user, current),
    }
