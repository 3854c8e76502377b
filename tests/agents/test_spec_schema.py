"""The spec's alert settings, and versions published under the first alerts schema."""

import pytest
from pydantic import ValidationError

from apps.agents.spec import AgentSpec


def test_alert_defaults_follow_the_seed():
    alerts = AgentSpec().alerts
    assert alerts.budget.audience == ["admins", "owner"]
    assert alerts.approvals.audience == ["initiator", "admins"]
    assert (alerts.usage.weekly, alerts.usage.monthly) == (False, False)


def test_a_version_published_with_notify_still_reads():
    legacy = AgentSpec.model_validate(
        {"alerts": {"budget_thresholds": [80, 100], "notify": ["owner"]}}
    )
    assert legacy.alerts.budget.audience == ["owner"]
    default_written = AgentSpec.model_validate(
        {"alerts": {"budget_thresholds": [80, 100], "notify": ["admins"]}}
    )
    assert default_written.alerts.budget.audience == ["admins", "owner"]


def test_an_unknown_audience_is_refused():
    with pytest.raises(ValidationError):
        AgentSpec.model_validate({"alerts": {"budget": {"audience": ["everyone"]}}})
