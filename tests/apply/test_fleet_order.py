"""The order several jobs are moved in (placement.apply.fleet_order): pure, on small examples checked by hand."""

from __future__ import annotations

import itertools

from placement.apply.fleet_order import JobLoads, choose_order, over_limit, state_load

LINK = "rpi1→server"


def test_a_sequential_order_exists_and_the_fleet_order_is_kept_when_safe():
    # A leaves the uplink, B moves onto it: A first keeps it at 30 (B old 10 + A new 0 ... then B new 30)
    jobs = [JobLoads("a", {LINK: 20.0}, {LINK: 0.0}), JobLoads("b", {LINK: 10.0}, {LINK: 30.0})]
    order = choose_order(jobs, {LINK: 30.0})
    assert order.strategy == "sequential"
    assert order.jobs == ("a", "b")
    assert order.peak[LINK] == 30.0
    assert "never puts more on a link" in order.reason


def test_the_safe_order_is_found_when_the_fleet_order_overloads():
    # b first would put b new 30 + a old 20 = 50 > 30; a first: 0 + 10 = 10, then the plans' 30
    jobs = [JobLoads("b", {LINK: 10.0}, {LINK: 30.0}), JobLoads("a", {LINK: 20.0}, {LINK: 0.0})]
    order = choose_order(jobs, {LINK: 30.0})
    assert (order.strategy, order.jobs) == ("sequential", ("a", "b"))


def test_only_stop_all_is_safe_when_two_jobs_swap_links():
    # a moves from link 1 to link 2, b from link 2 to link 1; each link carries one job at a time: any first move
    # puts both on one link
    l1, l2 = "rpi1→server", "rpi2→server"
    jobs = [JobLoads("a", {l1: 25.0, l2: 0.0}, {l1: 0.0, l2: 25.0}),
            JobLoads("b", {l1: 0.0, l2: 25.0}, {l1: 25.0, l2: 0.0})]
    order = choose_order(jobs, {l1: 30.0, l2: 30.0})
    assert order.strategy == "stop-all"
    assert order.jobs == ("a", "b")
    assert "a moved first: rpi2→server 50.00 > 30.00" in order.reason
    assert order.peak == {l1: 25.0, l2: 25.0}  # never more than the plans themselves


def test_unknown_old_load_means_stop_all():
    jobs = [JobLoads("a", None, {LINK: 1.0}), JobLoads("b", {LINK: 1.0}, {LINK: 1.0})]
    order = choose_order(jobs, {LINK: 30.0})
    assert order.strategy == "stop-all"
    assert "load of a is unknown" in order.reason


def test_one_job_is_sequential():
    order = choose_order([JobLoads("a", None, {LINK: 5.0})], {LINK: 30.0})
    assert (order.strategy, order.jobs) == ("sequential", ("a",))


def test_the_order_chosen_never_exceeds_a_link_on_random_fleets():
    """Exhaustive over small random fleets: a sequential order is chosen exactly when some permutation is safe, and
    every intermediate state of the chosen one is within the limits."""
    import random

    rng = random.Random(24)
    links = ["l1", "l2"]
    seen = {"sequential": 0, "stop-all": 0}
    for _ in range(300):
        n = rng.choice((2, 3, 4))
        jobs = [JobLoads(f"j{k}", {x: rng.choice((0.0, 5.0, 10.0, 20.0)) for x in links},
                         {x: rng.choice((0.0, 5.0, 10.0, 20.0)) for x in links}) for k in range(n)]
        limits = {x: rng.choice((20.0, 30.0, 40.0)) for x in links}

        def safe(perm):
            return all(not over_limit(state_load(jobs, frozenset(perm[:k])), limits) for k in range(1, len(perm)))

        any_safe = any(safe(p) for p in itertools.permutations([j.job for j in jobs]))
        order = choose_order(jobs, limits)
        seen[order.strategy] += 1
        assert (order.strategy == "sequential") == any_safe
        assert sorted(order.jobs) == sorted(j.job for j in jobs)
        if order.strategy == "sequential":
            assert safe(order.jobs)
    assert min(seen.values()) > 20, seen  # both cases are exercised
