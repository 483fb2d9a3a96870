"""Paths the profiling tests share."""

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "metrics" / "iot-sensors"
INVENTORY = ROOT / "inventory" / "edge-lab.yaml"
