from django.db import models


class ContextMode(models.TextChoices):
    """How a bound context file reaches the model (seed 000, "Contexto")."""

    # Inserted verbatim into the instructions, framed as reference material.
    INJECT = "inject", "Inject into the instructions"
    # Kept out of the prompt; read with read_context when the model decides it is relevant.
    LINK = "link", "Link (read on demand)"
