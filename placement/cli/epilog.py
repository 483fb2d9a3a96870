"""What ends every command's ``--help``: examples of that command, and the exit codes, the same for all commands.

Kept in one table so a command's help never cites a repository path a pip user does not have: examples name the
shipped inputs through ``placement examples --copy DIR`` (``ex/`` below).
"""

from __future__ import annotations

import click

EXIT_CODES = (
    "Exit codes: 0 done; 1 failed (the reason on one line); 2 bad input (an option, file or field, named on "
    "one line); 3 no placement fits (plan, the shortfall named); 130 interrupted (Ctrl-C); 141 stdout's "
    "reader stopped reading (| head), the rest done."
)

# command path -> examples; "ex/" is what `placement examples --copy ex` makes. " \\\n" continues an example on the
# next line: every line stays within 80 columns, where click does not re-flow them (see epilog_for).
INV = "ex/inventory/edge-lab.yaml"
EXAMPLES: dict[str, tuple[str, ...]] = {
    "": (
        "placement examples --copy ex",
        f"placement plan --inventory {INV} \\\n    --profile ex/examples/profiles/iot-sensors.json --out out/iot",
    ),
    "plan": (
        f"placement plan --inventory {INV} \\\n    --profile ex/examples/profiles/iot-sensors.json --out out/iot",
        "placement plan ... --out out/iot --json --quiet | jq .results[0].wan_mbit",
        "placement plan ... --out out/cap --max-rate --add-host rpi2=1",
    ),
    "show": ("placement show out/iot", "placement show out/iot --json | jq .assignment"),
    "apply": (
        f"placement apply out/iot --inventory {INV} --dry-run",
        f"placement apply out/iot --inventory {INV} --jar job.jar",
    ),
    "examples": ("placement examples", "placement examples --copy ex"),
    "profile": (f"placement profile out/metrics --out out/iot.json \\\n    --inventory {INV}",),
    "watch": (
        f"placement watch --inventory {INV} \\\n    --job-name iot-sensors --work-dir out/watch",
        "placement watch ... --job-name job-a --job-name job-b",
    ),
    "inventory validate": (f"placement inventory validate {INV}",),
    "inventory ansible": (
        f"placement inventory ansible {INV} \\\n    --out ex/ansible/hosts.yml",
        "cd ex/ansible && ansible-playbook -i hosts.yml site.yml",
    ),
    "metrics collect": ("placement metrics collect --rest http://192.168.1.180:8081 \\\n    --out out/metrics",),
    "netem apply": (f"placement netem apply --inventory {INV} --dry-run",),
    "netem show": (f"placement netem show --inventory {INV}",),
    "lab up": ("placement lab up --inventory ex/inventory/lab.yaml --work-dir /tmp/lab",),
    "lab status": ("placement lab status --work-dir /tmp/lab --json",),
}


def epilog_for(path: str) -> str:
    """Examples of ``path`` (if any) and the exit codes; ``\\b`` keeps click from re-flowing the example lines."""
    lines = EXAMPLES.get(path, ())
    examples = "\b\nExamples:\n" + "\n".join(f"  {line}" for line in lines) + "\n\n" if lines else ""
    return examples + EXIT_CODES


def add_epilogs(command: click.Command, path: str = "") -> click.Command:
    """Give ``command`` and every subcommand of it its epilog (once: the group hands out the same objects)."""
    if not getattr(command, "_placement_epilog", False):
        command.epilog = epilog_for(path)
        command._placement_epilog = True  # type: ignore[attr-defined]
        for name, sub in getattr(command, "commands", {}).items():
            add_epilogs(sub, f"{path} {name}".strip())
    return command
