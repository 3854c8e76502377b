"""Settings → Keys: the organization's vault in the console (write-only, like the API)."""

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from apps.audit.impersonation import refuse_while_impersonating
from apps.orgs.access import organization_from_request
from apps.orgs.permissions import SETTINGS_MANAGE

from . import selectors, services
from .models import USER_PURPOSES


class SecretForm(forms.Form):
    name = forms.CharField(max_length=100)
    purpose = forms.ChoiceField(choices=USER_PURPOSES)
    value = forms.CharField(
        widget=forms.PasswordInput(render_value=False),
        max_length=8192,
        help_text="Stored encrypted; never shown again, not even to you.",
    )


@login_required
def keys(request):
    organization = organization_from_request(request, SETTINGS_MANAGE)
    form = SecretForm(request.POST or None)
    if request.method == "POST":
        refuse_while_impersonating(request)
        if form.is_valid():
            try:
                services.secret_create(
                    actor=request.user, organization=organization, **form.cleaned_data
                )
            except ValidationError as error:
                messages.error(request, " ".join(error.messages))
            else:
                messages.success(request, f"{form.cleaned_data['name']} stored.")
                return redirect("vault:keys")
    return render(
        request, "vault/keys.html", {"form": form, "secrets": selectors.secrets_for(organization)}
    )


@login_required
@require_POST
def rotate(request, secret_id: int):
    organization = organization_from_request(request, SETTINGS_MANAGE)
    refuse_while_impersonating(request)
    secret = get_object_or_404(selectors.secrets_for(organization), pk=secret_id)
    value = request.POST.get("value", "").strip()
    try:
        services.secret_rotate(actor=request.user, secret=secret, value=value)
        messages.success(request, f"{secret.name} rotated.")
    except ValidationError as error:
        messages.error(request, " ".join(error.messages))
    return redirect("vault:keys")


@login_required
@require_POST
def delete(request, secret_id: int):
    organization = organization_from_request(request, SETTINGS_MANAGE)
    secret = get_object_or_404(selectors.secrets_for(organization), pk=secret_id)
    try:
        services.secret_delete(actor=request.user, secret=secret)
        messages.success(request, f"{secret.name} deleted.")
    except ValidationError as error:
        messages.error(request, " ".join(error.messages))
    return redirect("vault:keys")
