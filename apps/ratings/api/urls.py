from django.urls import path

from .views import MessageRatingView, RatingsSummaryView

urlpatterns = [
    path("messages/<int:pk>/rating/", MessageRatingView.as_view(), name="message-rating"),
    path("ratings/summary/", RatingsSummaryView.as_view(), name="ratings-summary"),
]
