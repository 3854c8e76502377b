from django import forms


class ImpersonationForm(forms.Form):
    email = forms.EmailField(label="Account to act as")
    reason = forms.CharField(
        max_length=500,
        required=False,
        widget=forms.TextInput,
        help_text="Recorded in the audit trail.",
    )
