"""The audit log: one JSON object per line for every step apply starts, finishes or fails.

Records hold the step's description (the SSH command or REST call, as ``--dry-run`` prints it), never file contents,
environment, key material or passwords: the inventory holds none, and uploads are logged by path and size only.
"""

from __future__ import annotations

import json
import os
import time
from datetime import datetime, timezone
from pathlib import Path


class AuditLog:
    def __init__(self, path: Path | None, apply_id: str):
        self.path = path
        self.apply_id = apply_id
        self.records: list[dict] = []

    def write(self, event: str, **fields: object) -> None:
        record = {
            "ts": datetime.now(timezone.utc).isoformat(timespec="milliseconds"),
            "apply": self.apply_id,
            "event": event,
            **fields,
        }
        self.records.append(record)
        if self.path is None:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        line = json.dumps(record, default=str, separators=(",", ":")) + "\n"
        fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o640)
        try:
            os.write(fd, line.encode())  # one write per record: concurrent appends do not interleave lines
        finally:
            os.close(fd)


def new_apply_id() -> str:
    return f"{time.strftime('%Y%m%dT%H%M%S', time.gmtime())}-{os.getpid()}"
