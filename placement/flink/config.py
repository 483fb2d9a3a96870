"""Flink's config files: ``config.yaml``, nested YAML <-> dotted keys (what the lab writes and apply edits on hosts),
and 1.x's line-based ``flink-conf.yaml`` where a host still has one (which file a version reads:
:mod:`placement.flink.options`)."""

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


# ---- Flink 1.x's legacy flink-conf.yaml ----------------------------------------------------------------------------
# Flink 1.19 and 1.20 read conf/flink-conf.yaml instead of config.yaml whenever it exists (placement.flink.options),
# with their line-based legacy parser: `key: value` per line, everything after '#' a comment, no nesting, no quoting,
# lists as `a;b`. These mirror that parser (GlobalConfiguration.loadLegacyYAMLResource), not YAML.


def _legacy_entry(line: str) -> tuple[str, str] | None:
    content = line.split("#", 1)[0].strip()
    key, sep, value = content.partition(": ")
    if not sep or not key.strip() or not value.strip():
        return None  # Flink skips such a line (with a warning)
    return key.strip(), value.strip()


def legacy_value(value: object) -> str:
    """A value as flink-conf.yaml spells it: lists joined by ``;``, booleans in lower case."""
    if isinstance(value, (list, tuple)):
        return ";".join(legacy_value(v) for v in value)
    if isinstance(value, bool):
        return "true" if value else "false"
    text = str(value)
    if "#" in text or "\n" in text:
        raise PlacementError(f"flink-conf.yaml cannot hold the value {text!r} (its parser cuts '#' and lines)")
    return text


def parse_legacy(text: str) -> dict[str, str]:
    """The dotted keys a flink-conf.yaml sets (the last line of a key wins, as in Flink)."""
    out: dict[str, str] = {}
    for line in text.splitlines():
        entry = _legacy_entry(line)
        if entry is not None:
            out[entry[0]] = entry[1]
    return out


def merge_legacy(text: str, updates: Mapping[str, object]) -> str:
    """``text`` with each key of ``updates`` set: its line replaced in place (later repeats dropped), new keys
    appended; every other line, comments included, kept as it was."""
    out: list[str] = []
    done: set[str] = set()
    for line in text.splitlines():
        entry = _legacy_entry(line)
        key = entry[0] if entry else None
        if key is not None and key in updates:
            if key not in done:
                out.append(f"{key}: {legacy_value(updates[key])}")
                done.add(key)
            continue
        out.append(line)
    out += [f"{key}: {legacy_value(value)}" for key, value in updates.items() if key not in done]
    return "\n".join(out) + "\n"
