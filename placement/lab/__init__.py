"""The edge lab: a real Flink cluster on this machine and the lab jobs that run on it.

* :mod:`placement.lab.flink` starts and stops JobManager/TaskManager JVMs from the apache-flink-libraries wheel.
* :mod:`placement.lab.jobs` compiles the Java lab jobs under ``deploy/jobs/`` with ``javac`` and packs them in a jar.
* :mod:`placement.lab.topology` (pure) plans the lab from an inventory: namespaces, veths, addresses, htb shapes,
  cgroup CPU quotas and the TaskManager specs.
* :mod:`placement.lab.home` (custom mode) the lab's own Flink home with the scheduler extension in ``lib/``.
* :mod:`placement.lab.sshd` an sshd per edge namespace, so ``placement apply`` reaches the lab's hosts over SSH.
* :mod:`placement.lab.runner` makes it so (``lab up``/``down``/``status``), with a state file and a prefix scan.
* :mod:`placement.lab.measure` measures WAN per uplink (veth and TCP counters) and the running jobs (REST).
* :mod:`placement.lab.chain` runs a lab job and moves it to a plan's placement (stop with savepoint, resubmit).
"""
