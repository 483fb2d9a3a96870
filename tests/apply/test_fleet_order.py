"""The order several jobs are moved in (placement.apply.fleet_order): pure, on small examples checked by hand."""

from __future__ import annotations

import itertools

from placement.apply.fleet_order import JobLoads, choose_order, cores, memory, slots, stop_all_asked, uplink

LINK = uplink("rpi1→server")


def test_a_sequential_order_exists_and_the_fleet_order_is_kept_when_safe():
    # A leaves the uplink, B moves onto it: A first keeps it at 30 (B old 10 + A new 0 ... then B new 30)
    jobs = [JobLoads("a", {LINK: 20.0}, {LINK: 0.0}), JobLoads("b", {LINK: 10.0}, {LINK: 30.0})]
    order = choose_order(jobs, {LINK: 30.0})
    assert order.strategy == "sequential"
    assert order.jobs == ("a", "b")
    assert "never puts more on a link" in order.reason and "(at most 100% of rpi1→server)" in order.reason


def test_stop_all_when_asked_even_where_an_order_is_safe():
    # the fleet of the first test: sequential is safe, and stop-all is what the user asked for
    jobs = [JobLoads("a", {LINK: 20.0}, {LINK: 0.0}), JobLoads("b", {LINK: 10.0}, {LINK: 30.0})]
    assert choose_order(jobs, {LINK: 30.0}).strategy == "sequential"
    order = stop_all_asked(jobs)
    assert (order.strategy, order.jobs) == ("stop-all", ("a", "b"))
    assert order.reason.startswith("asked for (--fleet-order stop-all)")


def test_the_safe_order_is_found_when_the_fleet_order_overloads():
    # b first would put b new 30 + a old 20 = 50 > 30; a first: 0 + 10 = 10, then the plans' 30
    jobs = [JobLoads("b", {LINK: 10.0}, {LINK: 30.0}), JobLoads("a", {LINK: 20.0}, {LINK: 0.0})]
    order = choose_order(jobs, {LINK: 30.0})
    assert (order.strategy, order.jobs) == ("sequential", ("a", "b"))


def test_only_stop_all_is_safe_when_two_jobs_swap_links():
    # a moves from link 1 to link 2, b from link 2 to link 1; each link carries one job at a time: any first move
    # puts both on one link
    l1, l2 = uplink("rpi1→server"), uplink("rpi2→server")
    jobs = [
        JobLoads("a", {l1: 25.0, l2: 0.0}, {l1: 0.0, l2: 25.0}),
        JobLoads("b", {l1: 0.0, l2: 25.0}, {l1: 25.0, l2: 0.0}),
    ]
    order = choose_order(jobs, {l1: 30.0, l2: 30.0})
    assert order.strategy == "stop-all"
    assert order.jobs == ("a", "b")
    assert "rpi2→server would carry 50.00 Mbit/s of 30.00 usable after moving a first" in order.reason


def test_unknown_old_load_means_stop_all():
    jobs = [JobLoads("a", None, {LINK: 1.0}), JobLoads("b", {LINK: 1.0}, {LINK: 1.0})]
    order = choose_order(jobs, {LINK: 30.0})
    assert order.strategy == "stop-all"
    assert "load of a is unknown" in order.reason


def test_one_job_is_sequential():
    order = choose_order([JobLoads("a", None, {LINK: 5.0})], {LINK: 30.0})
    assert (order.strategy, order.jobs) == ("sequential", ("a",))


def test_only_the_slots_force_the_order():
    # the uplink and the CPU allow either order; rpi1 has 4 slots: b (2 there) must leave before a fills 4.
    # a first: a new 4 + b old 2 = 6 > 4; b first: a old 0 + b new 0 = 0, then the plans' 4
    jobs = [
        JobLoads(
            "a",
            {LINK: 5.0, cores("rpi1"): 0.0, slots("rpi1"): 0.0},
            {LINK: 5.0, cores("rpi1"): 0.5, slots("rpi1"): 4.0},
        ),
        JobLoads(
            "b",
            {LINK: 5.0, cores("rpi1"): 0.5, slots("rpi1"): 2.0},
            {LINK: 5.0, cores("rpi1"): 0.0, slots("rpi1"): 0.0},
        ),
    ]
    limits = {LINK: 30.0, cores("rpi1"): 2.0, slots("rpi1"): 4.0}
    order = choose_order(jobs, limits)
    assert (order.strategy, order.jobs) == ("sequential", ("b", "a"))
    assert "(at most 100% of rpi1's slots)" in order.reason
    # without the slot limit the fleet's own order is kept: it was the slots alone that forced b first
    assert choose_order(jobs, {k: v for k, v in limits.items() if k != slots("rpi1")}).jobs == ("a", "b")


def test_nothing_fits_in_between_so_stop_all_names_the_resource():
    # a and b swap rpi1 and rpi2, each filling a Pi's 4 slots and most of its CPU: any first move puts both on one Pi
    jobs = [
        JobLoads(
            "job-A",
            {slots("rpi1"): 4.0, cores("rpi1"): 1.5, slots("rpi2"): 0.0, cores("rpi2"): 0.0},
            {slots("rpi1"): 0.0, cores("rpi1"): 0.0, slots("rpi2"): 4.0, cores("rpi2"): 1.5},
        ),
        JobLoads(
            "job-B",
            {slots("rpi1"): 0.0, cores("rpi1"): 0.0, slots("rpi2"): 1.0, cores("rpi2"): 0.5},
            {slots("rpi1"): 1.0, cores("rpi1"): 0.5, slots("rpi2"): 0.0, cores("rpi2"): 0.0},
        ),
    ]
    limits = {slots("rpi1"): 4.0, cores("rpi1"): 2.8, slots("rpi2"): 4.0, cores("rpi2"): 2.8}
    order = choose_order(jobs, limits)
    assert order.strategy == "stop-all"
    assert "rpi2's slots would be 5 of 4 after moving job-A first" in order.reason
    # and the CPU alone, with room in the slots: the cores are named, with their usable figure
    roomy = {**limits, slots("rpi1"): 8.0, slots("rpi2"): 8.0, cores("rpi1"): 1.8, cores("rpi2"): 1.8}
    order = choose_order(jobs, roomy)
    assert order.strategy == "stop-all"
    assert "rpi2's cores would be 2.00 of 1.80 usable after moving job-A first" in order.reason


def test_only_memory_rules_out_an_order_and_is_named():
    # job-A's keyed state moves from rpi1 to rpi2, job-B's from rpi2 to rpi1; the uplink, the CPU and the slots have
    # room for both on one Pi, rpi2's 1024 usable MiB do not: A first puts A new 768 + B old 512 = 1280 there
    def job(name: str, old: dict, new: dict) -> JobLoads:
        roomy = {LINK: 5.0, cores("rpi1"): 0.5, cores("rpi2"): 0.5, slots("rpi1"): 1.0, slots("rpi2"): 1.0}
        return JobLoads(name, {**roomy, **old}, {**roomy, **new})

    jobs = [
        job("job-A", {memory("rpi1"): 768.0, memory("rpi2"): 0.0}, {memory("rpi1"): 0.0, memory("rpi2"): 768.0}),
        job("job-B", {memory("rpi1"): 0.0, memory("rpi2"): 512.0}, {memory("rpi1"): 512.0, memory("rpi2"): 0.0}),
    ]
    limits = {
        LINK: 30.0,
        cores("rpi1"): 2.8,
        cores("rpi2"): 2.8,
        slots("rpi1"): 4.0,
        slots("rpi2"): 4.0,
        memory("rpi1"): 1024.0,
        memory("rpi2"): 1024.0,
    }
    order = choose_order(jobs, limits)
    assert order.strategy == "stop-all"
    assert "rpi2's memory would be 1280 of 1024 MiB usable after moving job-A first" in order.reason
    # the same fleet without the memory limits moves one job at a time: memory alone ruled that out
    no_memory = {r: v for r, v in limits.items() if r.kind != "memory"}
    assert choose_order(jobs, no_memory).strategy == "sequential"
    # room for B beside A on rpi1 but not for A beside B on rpi2: memory alone puts B first, and is the tightest
    order = choose_order(jobs, {**limits, memory("rpi1"): 1280.0})
    assert (order.strategy, order.jobs) == ("sequential", ("job-B", "job-A"))
    assert "(at most 100% of rpi1's memory)" in order.reason
    # a shortfall smaller than a MiB is not read as "1024 of 1024"
    tight = choose_order(jobs, {**limits, memory("rpi1"): 1279.6, memory("rpi2"): 1279.6})
    assert "rpi2's memory would be 1280.0 of 1279.6 MiB usable after moving job-A first" in tight.reason


def independently_safe(jobs: list[JobLoads], limits: dict, perm: tuple[str, ...]) -> bool:
    """Every mixed state of moving ``perm`` one at a time within ``limits``, summed here without the module's help."""
    by_name = {j.job: j for j in jobs}
    for k in range(1, len(perm)):
        moved = set(perm[:k])
        for res, limit in limits.items():
            total = sum((by_name[n].new if n in moved else by_name[n].old).get(res, 0.0) for n in by_name)
            if total > limit + 1e-9:
                return False
    return True


def test_the_order_chosen_never_exceeds_a_link_or_host_on_random_fleets():
    """Exhaustive over small random fleets: a sequential order is chosen exactly when some permutation keeps every
    uplink and every host's cores, slots and memory within the limits, and every intermediate state of the chosen
    one is within them."""
    import random

    rng = random.Random(24)
    resources = [
        uplink("l1"),
        uplink("l2"),
        cores("h1"),
        cores("h2"),
        slots("h1"),
        slots("h2"),
        memory("h1"),
        memory("h2"),
    ]
    amounts = {
        "uplink": (0.0, 5.0, 10.0, 20.0),
        "cores": (0.0, 0.25, 0.5, 1.0),
        "slots": (0.0, 1.0, 2.0, 3.0),
        "memory": (0.0, 256.0, 512.0, 1024.0),
    }
    # roomy enough that, with four kinds of resource, sequential and stop-all both stay common
    caps = {
        "uplink": (30.0, 40.0, 60.0),
        "cores": (1.5, 2.0, 3.0),
        "slots": (4.0, 6.0, 8.0),
        "memory": (1536.0, 2048.0, 3072.0),
    }
    seen = {"sequential": 0, "stop-all": 0}
    forced_by = {kind: 0 for kind in amounts}  # fleets where that kind alone rules the fleet's order out
    decided_by = {kind: 0 for kind in amounts}  # fleets whose chosen order changes when that kind is not judged
    for _ in range(400):
        n = rng.choice((2, 3, 4))
        jobs = [
            JobLoads(
                f"j{k}",
                {r: rng.choice(amounts[r.kind]) for r in resources},
                {r: rng.choice(amounts[r.kind]) for r in resources},
            )
            for k in range(n)
        ]
        limits = {r: rng.choice(caps[r.kind]) for r in resources}
        perms = list(itertools.permutations([j.job for j in jobs]))
        any_safe = any(independently_safe(jobs, limits, p) for p in perms)
        order = choose_order(jobs, limits)
        seen[order.strategy] += 1
        assert (order.strategy == "sequential") == any_safe
        assert sorted(order.jobs) == sorted(j.job for j in jobs)
        if order.strategy == "sequential":
            assert independently_safe(jobs, limits, order.jobs)
        fleet_order = perms[0]
        for kind in forced_by:
            alone = {r: v for r, v in limits.items() if r.kind == kind}
            forced_by[kind] += not independently_safe(jobs, alone, fleet_order)
            without = choose_order(jobs, {r: v for r, v in limits.items() if r.kind != kind})
            decided_by[kind] += (without.strategy, without.jobs) != (order.strategy, order.jobs)
    assert min(seen.values()) > 20, seen  # both cases are exercised
    assert min(forced_by.values()) > 20, forced_by  # and each kind of resource binds on its own
    assert min(decided_by.values()) > 20, decided_by  # and decides the result where the others would not


def test_a_job_not_moved_counts_in_every_mixed_state():
    # c's plan is in effect already (not moved) and holds 2 of rpi1's 4 slots: a first would be 2 + 2 (b old) + 2 = 6
    jobs = [
        JobLoads("a", {slots("rpi1"): 0.0}, {slots("rpi1"): 2.0}),
        JobLoads("b", {slots("rpi1"): 2.0}, {slots("rpi1"): 0.0}),
    ]
    limits = {slots("rpi1"): 4.0}
    assert choose_order(jobs, limits).jobs == ("a", "b")  # without c either order fits
    order = choose_order(jobs, limits, steady={slots("rpi1"): 2.0})
    assert (order.strategy, order.jobs) == ("sequential", ("b", "a"))
    assert "(at most 100% of rpi1's slots)" in order.reason  # c's 2 + the plans' 2
