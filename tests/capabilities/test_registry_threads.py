"""The registry loads its catalog once, and no thread reads it half loaded (a worker assembles
several runs at once on its threads, docs/runner.md)."""

import threading
import time

from apps.capabilities.registry import CapabilityRegistry, all_capabilities


def test_threads_asking_while_the_catalog_loads_wait_for_all_of_it():
    first, second = all_capabilities()[:2]
    registry: CapabilityRegistry

    def slow_loader():
        registry.add(first)
        time.sleep(0.2)  # a thread that looked now used to find only the first capability
        registry.add(second)

    registry = CapabilityRegistry(loader=slow_loader)
    found, errors = [], []

    def ask():
        try:
            found.append(registry.get(second.id).id)
        except KeyError as error:
            errors.append(error)

    threads = [threading.Thread(target=ask) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(5)

    assert errors == []
    assert found == [second.id] * 8
    assert registry.ids() == (first.id, second.id)
