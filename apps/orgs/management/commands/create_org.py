from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from apps.orgs.models import User
from apps.orgs.services import organization_create


class Command(BaseCommand):
    help = "Create an organization with its owner (an operator's command); prints the new slug."

    def add_arguments(self, parser):
        parser.add_argument("--name", required=True)
        parser.add_argument("--owner-email", required=True)

    def handle(self, *args, name, owner_email, **options):
        with transaction.atomic():
            owner = User.objects.filter(email__iexact=owner_email).first()
            if owner is None:
                owner = User.objects.create_user(email=owner_email, password=None)
            if not name.strip():
                raise CommandError("--name must not be empty")
            organization = organization_create(actor=None, name=name.strip(), owner=owner)
        self.stdout.write(organization.slug)
