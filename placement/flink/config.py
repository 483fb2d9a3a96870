"""Flink 2.x ``config.yaml``: nested YAML <-> dotted keys (what the lab writes and apply edits on hosts)."""

from __future__ import annotations

from collections.abc import Mapping

from placement.errors import PlacementError


def nest(flat: Mapping[str, object]) -> dict[str, object]:
    """Flink 2.x's nested config.yaml from dotted keys: ``{"rest.port": 1}`` -> ``{"rest": {"port": 1}}``.

    Where a key is both a leaf and a prefix of another key (``a.b: 1`` and ``a.b.c: 2``) the longer one stays
    dotted under the common parent, which Flink's YAML loader flattens back the same way.
    """
    out: dict[str, object] = {}
    for key in sorted(flat):
        node = out
        parts = key.split(".")
        for i, part in enumerate(parts[:-1]):
            child = node.get(part)
            if child is None:
                child = node[part] = {}
            if not isinstance(child, dict):  # an earlier leaf: keep the rest of this key dotted
                node[".".join(parts[i:])] = flat[key]
                break
            node = child
        else:
            leaf = parts[-1]
            if isinstance(node.get(leaf), dict):
                raise PlacementError(f"config key {key!r} is also a prefix of other keys")
            node[leaf] = flat[key]
    return out


def flatten(data: dict, prefix: str = "") -> dict[str, object]:
    """Flink's nested config.yaml as dotted keys (``{"a": {"b": 1}}`` -> ``{"a.b": 1}``)."""
    out: dict[str, object] = {}
    for key, value in data.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            out.update(flatten(value, name + "."))
        else:
            out[name] = value
    return out
