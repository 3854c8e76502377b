"""The invited person's page: ``/invitations/<token>/`` from the e-mail's link.

Signed in as the invited address: the invitation and an Accept button. Signed in as someone
else: a 404, the same as a link that never existed (a forwarded link tells its reader nothing).
Not signed in: "sign in to accept", and — only for an address with no account — a form to choose
a password, which creates the account and accepts in one step (the link proves the mailbox).
"""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth import login
from django.core.exceptions import ValidationError
from django.http import Http404
from django.shortcuts import redirect, render
from django.urls import reverse

from . import services
from .middleware import SESSION_KEY
from .models import User


def _page(request, invitation, token, *, status=200, error=None, new_account_errors=None):
    has_account = User.objects.filter(email__iexact=invitation.email).exists()
    return render(
        request,
        "orgs/invitation.html",
        {
            "invitation": invitation,
            "token": token,
            "error": error,
            "offer_new_account": not request.user.is_authenticated and not has_account,
            "login_url": f"{reverse('login')}?next={request.path}",
            "new_account_errors": new_account_errors or {},
        },
        status=status,
    )


def invitation_page(request, token: str):
    invitation = services.invitation_for_token(token)
    if invitation is None or invitation.revoked_at is not None:
        raise Http404("This invitation link is not valid.")
    signed_in = request.user.is_authenticated
    if signed_in and request.user.email.lower() != invitation.email.lower():
        raise Http404("This invitation link is not valid.")
    if invitation.accepted_at is not None:
        return _page(request, invitation, token, status=409, error="It was already accepted.")
    if invitation.is_expired:
        return _page(request, invitation, token, status=410, error="It expired: ask for a new one.")
    if request.method != "POST":
        return _page(request, invitation, token)
    try:
        if signed_in:
            membership = services.invitation_accept(actor=request.user, token=token)
        else:
            if request.POST.get("password") != request.POST.get("password_again"):
                return _page(
                    request,
                    invitation,
                    token,
                    status=422,
                    new_account_errors={"password": ["The two passwords differ."]},
                )
            user, membership = services.invitation_accept_new_account(
                token=token,
                password=request.POST.get("password", ""),
                full_name=request.POST.get("full_name", ""),
            )
            login(request, user, backend="django.contrib.auth.backends.ModelBackend")
    except services.InvitationNotFound:
        raise Http404("This invitation link is not valid.") from None
    except services.InvitationClosed as closed:
        return _page(
            request, invitation, token, status=410 if closed.expired else 409, error=str(closed)
        )
    except ValidationError as error:
        return _page(request, invitation, token, status=422, new_account_errors=error.message_dict)
    # The organization just joined becomes the current one.
    request.session[SESSION_KEY] = membership.organization_id
    messages.success(request, f"You joined {membership.organization.name}.")
    return redirect("console:dashboard")
