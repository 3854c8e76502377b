from django.urls import path

from . import views

app_name = "knowledge"

urlpatterns = [
    path("", views.collections, name="collections"),
    path("<int:collection_id>/", views.collection, name="collection"),
    path("<int:collection_id>/status/", views.collection_status, name="collection-status"),
    path(
        "<int:collection_id>/documents/<int:document_id>/reindex/",
        views.document_reindex,
        name="document-reindex",
    ),
    path(
        "<int:collection_id>/documents/<int:document_id>/delete/",
        views.document_delete,
        name="document-delete",
    ),
]
