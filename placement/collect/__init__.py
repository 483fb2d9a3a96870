"""Metrics collection from a running Flink job: REST answers -> typed sample rows -> Parquet history.

* :mod:`placement.collect.layout` — the on-disk layout (Parquet samples partitioned by job and run, a manifest per run).
* :mod:`placement.collect.shaping` — pure functions from Flink REST JSON to typed values and rows.
* :mod:`placement.collect.collector` — the thin polling loop behind ``placement metrics collect``.
"""
