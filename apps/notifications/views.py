"""The console's notification pages: the inbox and Settings → Notifications."""

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from apps.orgs.access import organization_from_request

from . import selectors, services


@login_required
def inbox(request):
    organization = organization_from_request(request)
    notifications = list(selectors.inbox_for(request.user, organization)[:100])
    for notification in notifications:
        # An approvals alert whose run no longer waits for anyone reads as resolved.
        notification.resolved = bool(notification.run_id and not notification.waiting)
    return render(request, "notifications/inbox.html", {"notifications": notifications})


@login_required
@require_POST
def mark_read(request):
    services.notifications_mark_read(
        user=request.user, organization=organization_from_request(request)
    )
    return redirect("notifications:inbox")


@login_required
def preferences(request):
    if request.method == "POST":
        receive = {
            tuple(value.split(":", 1)) for value in request.POST.getlist("receive") if ":" in value
        }
        services.preferences_set(user=request.user, receive=receive)
        messages.success(request, "Notification settings saved.")
        return redirect("notifications:preferences")
    return render(
        request, "notifications/preferences.html", {"grid": selectors.preference_grid(request.user)}
    )
