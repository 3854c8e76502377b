"""Factories for the fixed cast and anything a test needs beyond it."""

import factory

from apps.orgs.choices import Role
from apps.orgs.models import Membership, Organization, User

DEFAULT_PASSWORD = "correct-horse-battery"


class UserFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = User
        django_get_or_create = ["email"]

    email = factory.Sequence(lambda n: f"person{n}@example.com")
    password = factory.django.Password(DEFAULT_PASSWORD)


class OrganizationFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Organization

    name = factory.Sequence(lambda n: f"Org {n}")
    slug = factory.Sequence(lambda n: f"org-{n}")
    monthly_budget_usd = 100


class MembershipFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Membership

    organization = factory.SubFactory(OrganizationFactory)
    user = factory.SubFactory(UserFactory)
    role = Role.MEMBER


def member_of(organization: Organization, role: str, email: str) -> User:
    user = UserFactory(email=email)
    MembershipFactory(organization=organization, user=user, role=role)
    return user
