"""code_execution: run_python in pydantic-monty, with per-agent time and memory limits."""

from apps.capabilities.tools.calculations import OUTPUT_LIMIT, run_program

from .helpers import build, call, run_agent, tool_returns


def run(code, config=None, *, attempts=1):
    toolset = build("code_execution", config)
    steps = [[call("run_python", code=code)] for _ in range(attempts)] + ["done"]
    result, _ = run_agent([toolset], steps)
    return tool_returns(result.all_messages())


def test_it_returns_what_was_printed_and_the_last_value():
    (part,) = run("x = [1, 2, 3]\nprint(sum(x))\nmax(x) * 2")
    assert part.outcome == "success"
    assert part.content == "6\nValue of the last expression: 6"


def test_a_name_error_is_retried_with_the_error():
    parts = run("total = price * 3", attempts=2)
    assert parts[0].outcome == "retried"
    assert "NameError" in parts[0].content and "price" in parts[0].content
    # The last attempt hands the message back instead of ending the run.
    assert parts[1].outcome == "success" and "NameError" in parts[1].content


def test_a_syntax_error_is_retried():
    (part,) = run("def f(:\n    pass")
    assert part.outcome == "retried"
    assert "does not parse" in part.content


def test_the_time_limit_is_a_result_that_says_so():
    (part,) = run("print('started')\nwhile True:\n    pass", {"timeout_secs": 0.5})
    assert part.outcome == "success"
    assert "time limit of 0.5 seconds (timeout_secs)" in part.content
    assert "started" in part.content


def test_the_memory_limit_is_a_result_that_says_so():
    (part,) = run(
        "a = []\nwhile True:\n    a.append('x' * 100000)", {"max_memory_mb": 16, "timeout_secs": 10}
    )
    assert part.outcome == "success"
    assert "memory limit of 16 MB (max_memory_mb)" in part.content


def test_there_is_no_file_system_and_no_network():
    (opened,) = run("open('/etc/passwd').read()")
    assert opened.outcome == "success" and opened.content.startswith(
        "Refused: run_python has no file system"
    )
    (socket,) = run("import socket")
    assert socket.outcome == "retried" and "No module named 'socket'" in socket.content


def test_long_output_is_cut_with_a_marker():
    text = run_program("print('y' * 20000)", timeout_secs=5, max_memory_mb=64)
    assert len(text) < OUTPUT_LIMIT + 200
    assert text.startswith("y" * 100)
    assert "output cut at 8,000 characters" in text


def test_a_program_that_prints_nothing_says_so():
    assert "printed nothing" in run_program("x = 1", timeout_secs=5, max_memory_mb=64)
