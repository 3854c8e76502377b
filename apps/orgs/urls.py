"""Console routes of orgs: the invited person's page (namespace "orgs")."""

from django.urls import path

from . import views

app_name = "orgs"

urlpatterns = [
    path("invitations/<str:token>/", views.invitation_page, name="invitation"),
]
