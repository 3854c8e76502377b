from datetime import UTC, datetime, time, timedelta

from django import forms

from apps.orgs.choices import Role


class OrganizationForm(forms.Form):
    name = forms.CharField(max_length=200)
    monthly_budget_usd = forms.DecimalField(
        label="Monthly budget (USD)",
        max_digits=12,
        decimal_places=2,
        min_value=0,
        required=False,
        help_text="Every run of every agent in this organization stops at this cap. Empty means no cap.",
    )
    chat_may_waive_approvals = forms.BooleanField(
        label="Chat may waive approvals",
        required=False,
        help_text=(
            "Lets a person who may decide approvals choose “Approve everything” in a chat: the "
            "gated tools of that conversation then run without asking. Off: every gated call waits "
            "for a decision."
        ),
    )
    allow_personal_memory = forms.BooleanField(
        label="Allow personal memory",
        required=False,
        help_text=(
            "Agents keep notes about the person they talk to one-to-one. Off: no agent reads or "
            "writes a person's notes (for compliance or privacy); notes kept in group chats stay."
        ),
    )


class InviteForm(forms.Form):
    email = forms.EmailField()
    role = forms.ChoiceField(choices=Role.choices, initial=Role.MEMBER)


class RoleForm(forms.Form):
    role = forms.ChoiceField(choices=Role.choices)


class ApiKeyForm(forms.Form):
    name = forms.CharField(max_length=100, initial="API key")
    expires_on = forms.DateField(
        required=False,
        label="Expires on",
        widget=forms.DateInput(attrs={"type": "date"}),
        help_text="Optional. The key stops working at the end of this day (UTC).",
    )

    def expires_at(self):
        """The end of the chosen day in UTC, or None for a key that does not expire."""
        day = self.cleaned_data.get("expires_on")
        if day is None:
            return None
        return datetime.combine(day + timedelta(days=1), time.min, tzinfo=UTC) - timedelta(
            microseconds=1
        )


class ModelProfileForm(forms.Form):
    """Settings → Model profiles: the fields of ``agents.services.model_profile_create``."""

    label = forms.CharField(
        max_length=100, help_text="How the Builder and Activity name this model."
    )
    provider = forms.ChoiceField(choices=())
    model_name = forms.CharField(
        max_length=200,
        label="Model name",
        help_text="As the provider spells it, e.g. gpt-4.1-mini.",
    )
    base_url = forms.URLField(
        required=False,
        assume_scheme="https",
        label="Base URL",
        help_text="Only for an OpenAI-compatible server.",
    )
    secret_id = forms.TypedChoiceField(
        coerce=int,
        empty_value=None,
        required=False,
        label="Key from the vault",
        help_text="The provider key (Settings → Provider keys).",
    )
    context_window = forms.IntegerField(
        required=False,
        min_value=1,
        label="Context window (tokens)",
        help_text="Empty when unknown: the context gauge is then left out, never guessed.",
    )
    is_default = forms.BooleanField(required=False, label="Default for new runs")

    def __init__(self, *args, providers, secrets, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["provider"].choices = providers
        self.fields["secret_id"].choices = [
            ("", "— none —"),
            *((s["id"], f"{s['name']} ({s['purpose']})") for s in secrets),
        ]
