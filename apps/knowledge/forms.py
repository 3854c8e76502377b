from django import forms


class CollectionForm(forms.Form):
    name = forms.CharField(max_length=120)
    description = forms.CharField(max_length=300, required=False)
    restricted = forms.BooleanField(
        required=False,
        help_text="Only people you grant it to (and owners and admins) can read it or connect it to an agent.",
    )


class UploadForm(forms.Form):
    file = forms.FileField(
        help_text="PDF, DOCX, ODT, RTF, PPTX, Markdown, plain text, HTML or CSV."
    )
    org_unit = forms.CharField(
        max_length=120,
        required=False,
        label="Organizational unit",
        help_text="Optional: the team or department the document belongs to.",
    )
