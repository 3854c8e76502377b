"""Every tool description reaches the model in pydantic-ai's own shape (seed 000)."""

import pytest
from pydantic_ai import Tool

from apps.capabilities.registry import all_capabilities
from apps.capabilities.tool_text import (
    NO_ARGUMENTS,
    has_tool_text_shape,
    render_tool_text,
    split_tool_text,
)

ALL_TOOLS = [(c.id, t) for c in all_capabilities() for t in c.tools]


def _framework_tool(a: int, b: int) -> int:
    """Add two numbers.

    Args:
        a: The first number.
        b: The second number.

    Returns:
        The sum of a and b.
    """
    return a + b


def test_rendered_text_is_what_pydantic_ai_builds_from_a_docstring():
    built = Tool(_framework_tool).tool_def.description
    assert built == render_tool_text("Add two numbers.", "The sum of a and b.")
    assert has_tool_text_shape(built)


def test_plain_prose_is_not_the_shape():
    assert not has_tool_text_shape("Add two numbers.")
    assert not has_tool_text_shape("<summary>only a summary</summary>")


@pytest.mark.parametrize(("cap_id", "spec"), ALL_TOOLS, ids=lambda v: getattr(v, "id", v))
def test_tool_description_has_the_four_parts(cap_id, spec):
    assert has_tool_text_shape(spec.description)
    summary, returns = split_tool_text(spec.description)
    what, when, *rest = summary.split("\n\n")
    assert what == spec.title  # the Builder's sentence next to the approval box
    assert when.strip()
    args_part = rest[-1]
    if spec.arguments:
        assert args_part.startswith("Arguments:")
        for name in spec.arguments:
            assert f"- `{name}`:" in args_part
    else:
        assert args_part == NO_ARGUMENTS
    assert len(returns) > 20


def test_truncating_tools_say_where_they_stop():
    by_id = {t.id: t for _, t in ALL_TOOLS}
    assert "100" in split_tool_text(by_id["glob"].description)[1]
    assert "max_result_chars" in split_tool_text(by_id["wait_tasks"].description)[1]
    assert "100,000" in split_tool_text(by_id["read_artifact"].description)[1]
    assert "max_content_chars" in split_tool_text(by_id["web_fetch"].description)[1]
    assert "output_mode" in by_id["grep"].description
