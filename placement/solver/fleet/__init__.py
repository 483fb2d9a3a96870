"""Fleet-scale planning (``placement plan --method decompose``): Pis planned one by one, linked through server pools.

A fleet couples its Pis only through the servers: a Pi's uplink, CPU, memory and slots carry just the subtasks that
may run on that Pi. The exact model (:mod:`placement.solver.ilp`) has a variable per subtask and *host*; at 10 000 Pis
it is too big to build. This package splits the problem where the coupling is:

1. **Server pools** — each subtask may take at most one edge host (:mod:`placement.solver.homes`), and which server
   it takes changes no objective, so the servers the rules cannot tell apart form a pool whose rows are the sums of its
   members' rows (:mod:`placement.solver.server_pools`): a relaxation.
2. **Plans per Pi** (:mod:`.plans`) — a Pi's plan is the down-closed set of its subtasks it keeps; all of them that fit
   the Pi's own rows are enumerated (once per shape of its subgraph) and the dominated ones dropped. The master
   problem (:mod:`.columns`) chooses one plan per Pi under the pools' rows, with the latency rows of the Pis whose plans
   differ. A Pi too wide to enumerate, or a subtask with several edge hosts, sends the whole problem to the compact
   form (:mod:`.compact`: a column per subtask and place, the exact model's rows).
3. **Stages** (:mod:`.stages`) — WAN, then server CPU, then latency, each earlier stage kept within
   ``lexicographic_tolerance`` as in the exact model. Per stage the LP relaxation gives the bound (the Dantzig-Wolfe
   bound in the column form: every Pi convexified), then the MIP over the columns it left fractional gives the plan;
   reduced-cost fixing carries each stage's proof into the next, so the latency stage sees only the plans that tie.
4. **Packing** (:mod:`.solve`) — each pool's subtasks are packed onto its servers (:mod:`placement.solver.packing`).

**Bound and gap.** Every plan of the real servers is a plan of the pools with the same objective, so a bound proved
for a stage of the pooled model is a valid lower bound for that stage of the real problem; the gap reported is the
plan's objective against it, and a stage with gap 0 is optimal for the real problem. If a pool's plan does not pack
(a relaxation can be too generous), problems of up to 5 000 subtasks go to the exact model; bigger ones are re-solved
with that pool's rows tightened (the WAN stage keeps the untightened bound; later stages report none).

Not covered: vanilla placement mode (a whole operator on one host ties Pis and servers together): the exact model.
"""

from placement.solver.fleet.solve import solve_decomposed

__all__ = ["solve_decomposed"]
