from django.db import models


class Role(models.TextChoices):
    OWNER = "owner", "Owner"
    ADMIN = "admin", "Admin"
    OPERATOR = "operator", "Operator"
    BUILDER = "builder", "Builder"
    MEMBER = "member", "Member"
    VIEWER = "viewer", "Viewer"
