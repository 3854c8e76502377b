"""A person's rating of one assistant turn."""

from django.db import models


class Thumb(models.TextChoices):
    UP = "up", "Thumbs up"
    DOWN = "down", "Thumbs down"


class MessageRating(models.Model):
    """One per person per assistant turn, changeable (rating again replaces it).

    ``run`` is the run that produced the turn, copied from the message so the run history's
    ``rated`` filter and the summaries read one table. ``comment`` is free text; it is shown in a
    run's detail (the latest negative one) and never in a count.
    """

    organization = models.ForeignKey(
        "orgs.Organization", on_delete=models.CASCADE, related_name="message_ratings"
    )
    message = models.ForeignKey("runs.Message", on_delete=models.CASCADE, related_name="ratings")
    run = models.ForeignKey("runs.Run", on_delete=models.CASCADE, related_name="ratings")
    user = models.ForeignKey("orgs.User", on_delete=models.CASCADE, related_name="+")
    thumb = models.CharField(max_length=8, choices=Thumb.choices)
    comment = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        db_table = "message_ratings"
        constraints = [
            models.UniqueConstraint(
                fields=["message", "user"], name="message_rating_one_per_person"
            )
        ]
        indexes = [
            # ?rated=up|down on the run history: EXISTS (… WHERE run_id = … AND thumb = …).
            models.Index(fields=["run", "thumb"], name="message_rating_run_thumb_idx"),
            # The summary's window over an organization.
            models.Index(fields=["organization", "updated_at"], name="message_rating_org_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.user_id} {self.thumb} on {self.message_id}"
