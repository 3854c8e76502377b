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


class InviteForm(forms.Form):
    email = forms.EmailField()
    role = forms.ChoiceField(choices=Role.choices, initial=Role.MEMBER)


class RoleForm(forms.Form):
    role = forms.ChoiceField(choices=Role.choices)


class ApiKeyForm(forms.Form):
    name = forms.CharField(max_length=100, initial="API key")
