"""The edge lab: a real Flink cluster on this machine and the lab jobs that run on it.

* :mod:`placement.lab.flink` starts and stops JobManager/TaskManager JVMs from the apache-flink-libraries wheel.
* :mod:`placement.lab.jobs` compiles the Java lab jobs under ``deploy/jobs/`` with ``javac`` and packs them in a jar.
"""
