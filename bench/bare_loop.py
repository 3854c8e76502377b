"""The floor `bench_worker_runtime.py` compares the worker against: bare pydantic-ai on one event
loop in one process, with no governance, no database and no Celery — the same provider, the same
prompts and the same tools (the planning capability's, built from the same functions), at most
``slots`` runs at once as a worker process holds them.

    python -m bench.bare_loop BASE_URL COUNT PROMPT SLOTS

prints one JSON line: ``{"elapsed": s, "cpu": s, "requests": n}`` (CPU of this whole process).
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import sys
import time

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "agenticos.settings.test")
django.setup()
logging.getLogger("httpx2").setLevel(logging.WARNING)

from httpx2._config import create_ssl_context  # noqa: E402
from openai import AsyncOpenAI, DefaultAsyncHttpxClient  # noqa: E402
from pydantic_ai import Agent  # noqa: E402
from pydantic_ai.models.openai import OpenAIChatModel  # noqa: E402
from pydantic_ai.providers.openai import OpenAIProvider  # noqa: E402
from pydantic_ai.toolsets import FunctionToolset  # noqa: E402
from pydantic_ai.usage import UsageLimits  # noqa: E402

from apps.capabilities.tools.planning import GUIDANCE, PlanTools, RunPlan  # noqa: E402

# One TLS context per process, as the worker keeps one (apps/runs/modelbuilder.py): building
# one per client costs ~20 ms of CPU, which would flatter the governed side of the ratio.
_TLS = create_ssl_context()


async def _one(base_url: str, prompt: str) -> int:
    # A client per run, as the worker builds one per run (apps/runs/modelbuilder.py).
    client = AsyncOpenAI(
        base_url=base_url, api_key="bench", http_client=DefaultAsyncHttpxClient(verify=_TLS)
    )
    model = OpenAIChatModel("bench-model", provider=OpenAIProvider(openai_client=client))
    tools = FunctionToolset(list(PlanTools(RunPlan(), subtasks=False).functions().values()))
    agent = Agent(model, instructions=GUIDANCE, toolsets=[tools])
    async with agent.iter(prompt, usage_limits=UsageLimits(request_limit=10)) as agent_run:
        async for node in agent_run:
            if Agent.is_model_request_node(node) or Agent.is_call_tools_node(node):
                async with node.stream(agent_run.ctx) as stream:
                    async for _ in stream:
                        pass
    await client.close()
    return agent_run.usage.requests


async def _all(base_url: str, count: int, prompt: str, slots: int) -> int:
    gate = asyncio.Semaphore(slots)

    async def slot() -> int:
        async with gate:
            return await _one(base_url, prompt)

    return sum(await asyncio.gather(*(slot() for _ in range(count))))


def main() -> None:
    base_url, count, prompt, slots = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
    cpu_before, started = time.process_time(), time.perf_counter()
    requests = asyncio.run(_all(base_url, count, prompt, slots))
    print(
        json.dumps(
            {
                "elapsed": time.perf_counter() - started,
                "cpu": time.process_time() - cpu_before,
                "requests": requests,
            }
        )
    )


if __name__ == "__main__":
    main()
