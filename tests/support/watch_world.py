"""The small world the watch's decision tests run in: one server and one Pi (one core, 0.8 usable; a 14 Mbit/s
uplink, 12.6 usable), and jobs Source (born on rpi1) → Reduce (10:1) → Sink. Nothing listens on 127.0.0.1:9 (REST)
nor on port 9 of the hosts (SSH): a preflight is refused at once."""

from __future__ import annotations

from itertools import pairwise
from pathlib import Path

import yaml

from placement.profile.format import JobProfile


def vertex(name: str, *, rin: float, rout: float, busy: float, bpr: float) -> dict:
    return {
        "id": name.lower().replace(" ", "-").replace(":", ""),
        "name": name,
        "parallelism": 1,
        "stateful": False,
        "state_bytes": 0.0,
        "bytes_per_record_out": bpr,
        "subtasks": [{"index": 0, "records_in_per_s": rin, "records_out_per_s": rout, "busy_ms_per_s": busy}],
    }


def reducing_job(tag: str, rate: float, record_bytes: float, *, reduce_ms_per_record: float) -> JobProfile:
    """``job-TAG``: Source: TAG at ``rate`` records/s of ``record_bytes`` → Reduce TAG (``reduce_ms_per_record`` of
    busy time each, 10:1, 1,250-byte records out) → Sink: TAG."""
    names = [f"Source: {tag}", f"Reduce {tag}", f"Sink: {tag}"]
    vertices = [
        vertex(names[0], rin=0, rout=rate, busy=10, bpr=record_bytes),
        vertex(names[1], rin=rate, rout=rate / 10, busy=reduce_ms_per_record * rate, bpr=1250),
        vertex(names[2], rin=rate / 10, rout=0, busy=5, bpr=0),
    ]
    ids = [v["id"] for v in vertices]
    return JobProfile.model_validate(
        {
            "job": {"name": f"job-{tag}", "origin": "synthetic"},
            "vertices": vertices,
            "edges": [{"source": a, "target": b, "ship_strategy": "FORWARD"} for a, b in pairwise(ids)],
        }
    )


def one_pi_inventory(path: Path, tags: list[str], *, jobs: bool) -> Path:
    """The inventory at ``path``: each tag's source pinned to rpi1; ``jobs``: a ``jobs:`` entry per tag (a fleet)."""
    doc: dict = {
        "ssh": {"port": 9},
        "hosts": [
            {"name": "server", "address": "127.0.0.1", "role": "server", "cores": 8, "memory": "16GiB"},
            # its Netty server costs nothing here: the scales are tuned to its 0.8 usable cores
            # (tests/planning/test_netty_cpu.py holds the planners to that charge)
            {
                "name": "rpi1",
                "address": "127.0.0.2",
                "role": "edge",
                "model": "rpi4b",
                "cores": 1,
                "task_slots": 4,
                "netty_cores_per_delivery": 0.0,
            },
        ],
        "links": [{"from": "rpi1", "to": "server", "bandwidth": "14mbit", "delay": "50ms"}],
        "pins": {"sources": {f"Source: {t}": "rpi1" for t in tags}},
        "flink": {"rest_url": "http://127.0.0.1:9"},
    }
    if jobs:
        doc["jobs"] = [{"name": f"job-{t}"} for t in tags]
    path.write_text(yaml.safe_dump(doc))
    return path
