from django.conf import settings
from django.core.management.base import BaseCommand

from agenticos.schedule import sync_schedule
from apps.orgs.services import bootstrap


class Command(BaseCommand):
    help = "Create the first organization and its owner (idempotent); sync the periodic schedule."

    def handle(self, *args, **options):
        sync_schedule()
        organization, owner, password = bootstrap(
            org_name=settings.AGENTICOS_ORG_NAME,
            admin_email=settings.AGENTICOS_ADMIN_EMAIL,
            admin_password=settings.AGENTICOS_ADMIN_PASSWORD,
        )
        self.stdout.write(
            f"organization {organization.slug} (id {organization.pk}); owner {owner.email}"
        )
        if password:
            self.stdout.write(f"generated password for {owner.email}: {password}")
