"""Every read of ratings: the turns a reader may rate, the ratings a transcript carries, and the
summary counts (never the comments, which stay behind a run's detail)."""

from __future__ import annotations

import datetime as dt
from collections import defaultdict

from django.db.models import Count, Q, QuerySet
from django.db.models.functions import TruncDate

from apps.runs.models import Message
from apps.runs.selectors import runs_visible_to
from apps.spend.filters import SpendWindow

from .models import MessageRating, Thumb


def message_for_rater(user, organization, message_id) -> Message | None:
    """An assistant turn the person may rate: in their own conversation, or produced by a run
    they may read (runs:view, or their own). Another organization's reads as absent."""
    if organization is None:
        return None
    return (
        Message.objects.filter(pk=message_id, conversation__organization=organization)
        .filter(
            Q(conversation__user_id=user.pk)
            | Q(run__in=runs_visible_to(user, organization).values("pk"))
        )
        .select_related("conversation__organization")
        .first()
    )


def turn_ratings(message_ids, *, reader_id: int | None) -> dict[int, dict]:
    """Per turn, in one batch: the reader's own thumb, the organization's up and down counts and
    the comment of the most recent negative rating (never a positive one's). A turn nobody rated
    is absent, and reads as an ordinary turn."""
    ratings: dict[int, dict] = defaultdict(
        lambda: {"my_rating": None, "ratings_up": 0, "ratings_down": 0, "latest_down_comment": ""}
    )
    rows = (
        MessageRating.objects.filter(message_id__in=list(message_ids))
        .order_by("message_id", "-updated_at", "-pk")
        .values_list("message_id", "user_id", "thumb", "comment")
    )
    for message_id, user_id, thumb, comment in rows:
        entry = ratings[message_id]
        entry["ratings_up" if thumb == Thumb.UP else "ratings_down"] += 1
        if user_id == reader_id:
            entry["my_rating"] = thumb
        if thumb == Thumb.DOWN and comment and not entry["latest_down_comment"]:
            entry["latest_down_comment"] = comment
    return dict(ratings)


def scoped_ratings(organization, *, own_user_id: int | None) -> QuerySet[MessageRating]:
    """The organization's ratings, or (scope=own) the ratings on the reader's own runs."""
    ratings = MessageRating.objects.filter(organization=organization)
    if own_user_id is not None:
        ratings = ratings.filter(run__user_id=own_user_id)
    return ratings


def ratings_summary(organization, window: SpendWindow, *, own_user_id: int | None) -> dict:
    """Up/down counts of the window (a rating counts on the day it was last set) and one point
    per UTC day, days without ratings included as zeros. Top-level and delegated runs alike: a
    person rates the answer they read, which is always a top-level run's turn."""
    ratings = scoped_ratings(organization, own_user_id=own_user_id).filter(
        updated_at__gte=window.since, updated_at__lte=window.until
    )
    headline = ratings.aggregate(
        up=Count("pk", filter=Q(thumb=Thumb.UP)), down=Count("pk", filter=Q(thumb=Thumb.DOWN))
    )
    per_day: dict[dt.date, dict[str, int]] = {
        row["day"]: {"up": row["up"], "down": row["down"]}
        for row in ratings.annotate(day=TruncDate("updated_at", tzinfo=dt.UTC))
        .order_by()
        .values("day")
        .annotate(
            up=Count("pk", filter=Q(thumb=Thumb.UP)), down=Count("pk", filter=Q(thumb=Thumb.DOWN))
        )
    }
    total = headline["up"] + headline["down"]
    return {
        "up": headline["up"],
        "down": headline["down"],
        "total": total,
        # The share of ratings that were positive; null when nobody rated (not 0 %, not 100 %).
        "up_share": None if total == 0 else round(headline["up"] / total, 4),
        "daily": [
            {
                "date": day,
                "up": per_day.get(day, {}).get("up", 0),
                "down": per_day.get(day, {}).get("down", 0),
            }
            for day in window.days()
        ],
    }
