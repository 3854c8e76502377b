from django.urls import path

from . import views

app_name = "vault"

urlpatterns = [
    path("settings/keys/", views.keys, name="keys"),
    path("settings/keys/<int:secret_id>/rotate/", views.rotate, name="rotate"),
    path("settings/keys/<int:secret_id>/delete/", views.delete, name="delete"),
]
