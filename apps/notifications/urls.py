from django.urls import path

from . import views

app_name = "notifications"

urlpatterns = [
    path("notifications/", views.inbox, name="inbox"),
    path("notifications/read/", views.mark_read, name="mark-read"),
    path("settings/notifications/", views.preferences, name="preferences"),
]
