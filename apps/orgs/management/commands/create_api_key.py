from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from apps.orgs.models import Organization, User
from apps.orgs.services import api_key_create


class Command(BaseCommand):
    help = "Issue an API key for a member of an organization; prints only the key."

    def add_arguments(self, parser):
        parser.add_argument("--org", required=True, help="organization slug")
        parser.add_argument("--email", required=True)
        parser.add_argument("--name", default="CLI key")

    def handle(self, *args, org, email, name, **options):
        organization = Organization.objects.filter(slug=org).first()
        if organization is None:
            raise CommandError(f"no organization with slug {org!r}")
        user = User.objects.filter(email__iexact=email).first()
        if user is None:
            raise CommandError(f"no account with email {email!r}")
        try:
            _, raw_key = api_key_create(actor=None, organization=organization, user=user, name=name)
        except ValidationError as error:
            raise CommandError(" ".join(error.messages)) from error
        self.stdout.write(raw_key)
