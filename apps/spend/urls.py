"""Console routes of the spend app, included at the root by agenticos/urls.py."""

from django.urls import path

from . import views

app_name = "spend"

urlpatterns = [
    path("spend/", views.spend_page, name="page"),
    path("spend/export/", views.spend_download, name="export"),
]
