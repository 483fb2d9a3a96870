"""The ONLY skips strict mode (``PLACEMENT_STRICT=1`` / ``pytest --strict-real``, set by ``.ci/run``) accepts.

Each entry is a fact about the machine's kernel that no installation step can change: the test that needs the other
side of the fact cannot run here, and another test covers this side. A missing program, package, JDK, namespace,
sshd, Spark or a version mismatch is NOT such a fact — under strict mode it fails the run
(:func:`support.real_parts.missing`). Tests take an allowed skip only through :func:`support.real_parts.kernel_fact`,
and the run's summary lists every allowed skip taken.
"""

from __future__ import annotations

ALLOWED_SKIPS: dict[str, str] = {
    "no-sch-netem": "this kernel has no sch_netem qdisc (tc answers 'Specified qdisc kind is unknown'): delay, jitter "
    "and loss cannot be emulated; the rate-limit-only path is tested instead",
    "has-sch-netem": "this kernel has sch_netem: the rate-limit-only fallback for kernels without it cannot happen; "
    "the delay tests cover netem instead",
    "machine-not-x86_64": "the kernel reports a machine other than x86_64 (uname -m): the amd64 JVM path cannot be "
    "checked against a real host; the arm64 path is tested with a fake architecture",
}
