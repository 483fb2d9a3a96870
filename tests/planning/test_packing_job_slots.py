"""The exact packing (placement/solver/packing.py) with several jobs on the servers: its per-job slot rows are
:func:`placement.solver.families.job_slots`; it packs exactly when some assignment of the subtasks to the servers
holds every server's cores, memory, threads and slots counted per job (jobs never share a slot), found here by
trying them all."""

from __future__ import annotations

import itertools

import pytest
from multi_job_factories import problems, random_instance

from placement.costmodel.jobs import combine
from placement.solver import families, packing


def fits(pr, items, servers, assignment) -> bool:
    for h in servers:
        here = [s for s, name in zip(items, assignment) if name == h.name]
        if not (
            all(pr.keeps_up(s, h) for s in here)
            and sum(families.cpu_need(s, h) for s in here) <= families.cpu_room(pr, h) + 1e-9
            and sum(families.memory_need(s) for s in here) <= families.memory_room(pr, h) + 1e-9
            and pr.slots_needed(here) <= h.slots
        ):
            return False
    return True


def some_packing(pr, items, servers) -> bool:
    return any(
        fits(pr, items, servers, combo) for combo in itertools.product([h.name for h in servers], repeat=len(items))
    )


@pytest.mark.parametrize("seed", range(1000, 1012))
def test_exact_packing_packs_exactly_what_fits_per_job(seed):
    inv, profiles = random_instance(seed, servers=2)
    pr = combine(problems(inv, profiles)).problem
    servers = pr.servers
    items = [s for s in pr.subtasks if not s.is_source][:7]  # at most 2^7 assignments
    assert len({pr.vertex_job[s.vertex_id] for s in items}) == 2
    packed = packing._exact(pr, items, servers, time_limit=30.0)
    if packed is None:
        assert not some_packing(pr, items, servers), seed
    else:
        assert fits(pr, items, servers, [packed[s.key] for s in items]), seed
