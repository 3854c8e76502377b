from django import forms
from django.contrib import admin

from . import services
from .models import Secret


class SecretAdminForm(forms.ModelForm):
    # Write-only: the field is always empty when the form opens.
    value = forms.CharField(
        widget=forms.PasswordInput(render_value=False),
        required=False,
        help_text="Type a new value to set or rotate it; it is never shown.",
    )

    class Meta:
        model = Secret
        fields = ["organization", "name", "purpose"]


@admin.register(Secret)
class SecretAdmin(admin.ModelAdmin):
    form = SecretAdminForm
    list_display = ["name", "purpose", "organization", "hint", "created_at", "rotated_at"]
    list_filter = ["purpose", "organization"]
    search_fields = ["name", "organization__name"]
    readonly_fields = ["hint", "created_at", "rotated_at"]

    def get_queryset(self, request):
        return super().get_queryset(request).defer("ciphertext")

    def save_model(self, request, obj, form, change):
        value = form.cleaned_data.get("value")
        if change:
            if value:
                services.secret_rotate(actor=request.user, secret=obj, value=value)
            else:
                obj.save(update_fields=["name", "purpose"])
        else:
            created = services.secret_create(
                actor=request.user,
                organization=obj.organization,
                name=obj.name,
                purpose=obj.purpose,
                value=value or "",
            )
            obj.pk = created.pk
