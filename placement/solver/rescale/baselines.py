"""The plans the joint one is compared with — each the same ILP with the parallelism fixed beforehand, so each is a
restriction of the joint problem and the joint plan is never worse (when their parallelism is within the bounds).

* **placement alone** — today's parallelism (the profile's), placed by the ILP at the target rates.
* **DS2 → ILP** (what CAPSys does) — DS2 sizes every operator first, from its true processing rate on a server core:
  the smallest ``p`` with ``A_v/p + B_v ≤ λ_v·ρ`` (``p = ⌈target input / (λ_v·ρ)⌉`` without broadcast inputs), the
  largest over a forward group (FORWARD needs one parallelism), within the allowed range; then the ILP places it.
  DS2 knows nothing of the slower Pis, so an operator sized for a server core may not keep up on one.
"""

from __future__ import annotations

from placement.costmodel.rescaled import RescaleSpace
from placement.solver.rescale.solve import RescaleResult, solve_rescale
from placement.solver.result import SolverOptions


def placement_alone(space: RescaleSpace, options: SolverOptions | None = None) -> RescaleResult:
    fixed = space.restricted({g.id: (space.profiled(g.id),) for g in space.rescalable})
    return solve_rescale(fixed, options, strategy="placement alone")


def ds2_parallelism(space: RescaleSpace) -> dict[str, int]:
    """Rescalable group id -> DS2's parallelism."""
    rho = space.inventory.policy.cpu_utilisation_target
    out = {}
    for g in space.rescalable:
        low, high = g.choices[0], g.choices[-1]
        wanted = [space.rates[vid].min_parallelism(rho, high) or high for vid in g.members]
        out[g.id] = min(max(max(wanted), low), high)
    return out


def ds2_then_place(space: RescaleSpace, options: SolverOptions | None = None) -> RescaleResult:
    fixed = space.restricted({gid: (p,) for gid, p in ds2_parallelism(space).items()})
    return solve_rescale(fixed, options, strategy="DS2 → ILP")
