"""Reading YAML/JSON documents into pydantic models, with one-line errors that name the file and field."""

from __future__ import annotations

import hashlib
import json
import math
import re
from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ConfigDict, ValidationError
from pydantic_core import ErrorDetails

from placement.errors import BadInput

M = TypeVar("M", bound=BaseModel)


class Strict(BaseModel):
    """A model of a document we read or write: a field it does not declare is an error (a typo), never ignored.

    Built when first used, not when its module is imported: every command imports far more models than it reads or
    writes (a plan of one job, fleet.json's and the contingencies' too), and building one is most of its cost."""

    model_config = ConfigDict(extra="forbid", defer_build=True)


def empty_list() -> list:
    """``Field(default_factory=empty_list)``, not ``list``: pydantic inspects a default factory's signature when it
    builds the model, and a builtin's is parsed from its text (the tokenizer's patterns compiled on first use), a
    function's read directly — the models a plan imports are built at every start."""
    return []


def empty_dict() -> dict:
    """``Field(default_factory=empty_dict)``, not ``dict``: see :func:`empty_list`."""
    return {}


class FieldError(ValueError):
    """A cross-field check failure that knows which field it is about (pydantic keeps it in the error ctx)."""

    def __init__(self, field: str, message: str):
        self.field = field
        super().__init__(message)


def field_path(loc: tuple[Any, ...]) -> str:
    """``('hosts', 1, 'bandwidth')`` -> ``'hosts[1].bandwidth'``."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out


# pydantic names a union's members in the error location by their schema ("function-before[parse_time_ms(), float]",
# "list[str]", "str"): no field of ours is called that, so such a part is a member's tag, never a field name
_TAG = re.compile(r"^(?:str|int|float|bool|none|[a-z_-]+\[.*\])$")
_UNIT_PARSERS = {  # placement.units' parsers -> what they take (singular, plural)
    "parse_time_ms": ("a time like '50ms'", "times like '50ms'"),
    "parse_duration_ms": ("a duration like '10s'", "durations like '10s'"),
    "parse_rate_mbit": ("a rate like '50mbit'", "rates like '50mbit'"),
    "parse_positive_rate_mbit": ("a rate like '50mbit'", "rates like '50mbit'"),
    "parse_size_mib": ("a size like '4GiB'", "sizes like '4GiB'"),
    "parse_size_bytes": ("a size like '4KiB'", "sizes like '4KiB'"),
    "parse_percent": ("a percentage like '0.5%'", "percentages like '0.5%'"),
}
_SCALARS = {
    "str": ("a string", "strings"),
    "int": ("a whole number", "whole numbers"),
    "float": ("a number", "numbers"),
    "bool": ("true or false", "true or false"),
    "none": ("null", "nulls"),
}


def _split_args(text: str) -> list[str]:
    """``'str,list[int]'`` -> ``['str', 'list[int]']``: commas outside brackets."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        depth += ch == "["
        depth -= ch == "]"
        if ch == "," and depth == 0:
            parts.append(text[start:i].strip())
            start = i + 1
    return [*parts, text[start:].strip()]


def describe_tag(tag: str, plural: bool = False) -> str:
    """What a pydantic schema tag takes, in words: ``'list[str]'`` -> ``'a list of strings'``."""
    m = re.fullmatch(r"([a-z_-]+)\[(.*)\]", tag)
    if m is None:
        return _SCALARS.get(tag, (tag, tag))[plural]
    kind, args = m.group(1), _split_args(m.group(2))
    if kind.startswith("function-"):
        parser = args[0].removesuffix("()")
        if parser in _UNIT_PARSERS:
            return _UNIT_PARSERS[parser][plural]
        return describe_tag(args[-1], plural)
    if kind in ("list", "set", "frozenset", "tuple"):
        return ("lists of " if plural else "a list of ") + describe_tag(args[0], True)
    if kind == "dict":
        return ("mappings to " if plural else "a mapping to ") + describe_tag(args[-1], True)
    if kind == "nullable":
        return describe_tag(args[0], plural) + " or null"
    return describe_tag(args[-1], plural)


def _untagged(loc: tuple[Any, ...]) -> tuple[Any, ...]:
    return tuple(part for part in loc if not (isinstance(part, str) and _TAG.match(part)))


def _union_choice(errors: list[ErrorDetails]) -> tuple[ErrorDetails, str | None, int]:
    """The error to report, the message for a value no member of a union took (None: the error's own), and how many
    of ``errors`` it stands for. A union's members each fail with their tag in the location: when one of them got
    further into the value (a mapping with a bad entry), that one's error is the problem; when none did, the message
    says what the field takes."""
    first = errors[0]
    loc = first["loc"]
    t = next((k for k, part in enumerate(loc) if isinstance(part, str) and _TAG.match(part)), None)
    if t is None:
        return first, None, 1
    prefix = loc[:t]
    members = [
        e
        for e in errors
        if len(e["loc"]) > t and e["loc"][:t] == prefix and isinstance(tag := e["loc"][t], str) and _TAG.match(tag)
    ]
    deeper = [e for e in members if len(e["loc"]) > t + 1]
    if deeper:
        return max(deeper, key=lambda e: len(e["loc"])), None, len(members)
    tags = list(dict.fromkeys(str(e["loc"][t]) for e in members))  # str already: the members are those with a tag
    takes = (
        ", ".join(describe_tag(tag) for tag in tags[:-1]) + (" or " if len(tags) > 1 else "") + describe_tag(tags[-1])
    )
    return first, f"takes {takes}, not {first.get('input')!r}", len(members)


def describe_validation_error(err: ValidationError, source: str) -> BadInput:
    """Turn pydantic's error list into one BadInput naming the first failing field (and how many more)."""
    errors = err.errors(include_url=False)
    first, union_message, covered = _union_choice(errors)
    ctx_error = (first.get("ctx") or {}).get("error")
    field = field_path(_untagged(first["loc"]))
    if isinstance(ctx_error, FieldError):  # raised by a model validator: its field is relative to that model's place
        field = f"{field}.{ctx_error.field}" if field else ctx_error.field
    message = str(ctx_error) if isinstance(ctx_error, ValueError) else first["msg"]
    if union_message is not None:
        message = union_message
    elif first["type"] == "missing":
        message = "required field is missing"
    elif first["type"] == "extra_forbidden":
        message = "unknown field"
    more = len(errors) - covered
    if more > 0:
        message += f" (and {more} more problem{'s' if more > 1 else ''})"
    return BadInput(message, source=source, field=field or None)


def _duplicate_key(node: yaml.Node, path: tuple[Any, ...] = ()) -> tuple[tuple[Any, ...], yaml.Node, yaml.Node] | None:
    """The first mapping key given twice under ``node`` (its path, both key nodes): YAML keeps only the last, so a
    second ``policy:`` would silently replace the first."""
    if isinstance(node, yaml.MappingNode):
        seen: dict[str, yaml.Node] = {}
        for key_node, value_node in node.value:
            if isinstance(key_node, yaml.ScalarNode) and key_node.tag != "tag:yaml.org,2002:merge":
                if key_node.value in seen:
                    return (*path, key_node.value), seen[key_node.value], key_node
                seen[key_node.value] = key_node
            found = _duplicate_key(value_node, (*path, getattr(key_node, "value", "?")))
            if found:
                return found
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            found = _duplicate_key(item, (*path, i))
            if found:
                return found
    return None


class DuplicateKey(ValueError):
    def __init__(self, field: str, message: str):
        self.field = field
        super().__init__(message)


def _load_yaml(text: str) -> Any:
    """``yaml.safe_load`` that refuses a key given twice in one mapping.

    Parsed by libyaml (``CSafeLoader``) when PyYAML has it, which is several times faster; a document it refuses
    is parsed again by the pure-Python loader, so an error names the line, column and problem it always named."""
    fast = getattr(yaml, "CSafeLoader", None)
    if fast is not None:
        try:
            return _load_yaml_with(fast, text)
        except (yaml.YAMLError, DuplicateKey):
            pass  # the error below is the pure-Python loader's
    return _load_yaml_with(yaml.SafeLoader, text)


def _load_yaml_with(loader_class: type[yaml.SafeLoader], text: str) -> Any:
    loader = loader_class(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        found = _duplicate_key(node)
        if found:
            where, first, again = found
            a, b = first.start_mark, again.start_mark
            at = (
                f"line {a.line + 1}, columns {a.column + 1} and {b.column + 1}"
                if a.line == b.line
                else f"lines {a.line + 1} and {b.line + 1}"
            )
            raise DuplicateKey(field_path(where), f"given twice ({at}): YAML would keep only the second")
        return loader.construct_document(node)
    finally:
        loader.dispose()


def _non_finite(data: Any, path: tuple[Any, ...] = ()) -> tuple[tuple[Any, ...], float] | None:
    """The first NaN or infinity in a parsed document, and where."""
    if isinstance(data, float) and not math.isfinite(data):
        return path, data
    items = data.items() if isinstance(data, dict) else enumerate(data) if isinstance(data, list) else ()
    for key, value in items:
        found = _non_finite(value, (*path, key))
        if found:
            return found
    return None


def read_document(path: str | Path) -> Any:
    """Parse a YAML or JSON file; missing files and syntax errors become one-line BadInput errors."""
    p = Path(path)
    if not p.exists():
        raise BadInput("file not found", source=str(p))
    if p.is_dir():
        raise BadInput("is a directory, expected a file", source=str(p))
    try:
        text = p.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise BadInput(f"cannot read: {exc}", source=str(p)) from None
    try:
        if p.suffix.lower() == ".json":
            return json.loads(text)
        return _load_yaml(text)
    except DuplicateKey as exc:
        raise BadInput(str(exc), source=str(p), field=exc.field) from None
    except json.JSONDecodeError as exc:
        raise BadInput(f"invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}", source=str(p)) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1} column {mark.column + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or "syntax error"
        raise BadInput(f"invalid YAML{where}: {problem}", source=str(p)) from None


def load_model(path: str | Path, model: type[M], *, finite: str | None = None) -> M:
    """Read ``path`` and validate it as ``model``; every failure is a BadInput naming the file and field. ``finite``:
    refuse NaN and infinities anywhere in the document (JSON's ``NaN``, YAML's ``.nan``), saying this hint."""
    data = read_document(path)
    if not isinstance(data, dict):
        raise BadInput(f"expected a mapping at the top level, found {type(data).__name__}", source=str(path))
    if finite is not None:
        found = _non_finite(data)
        if found:
            where, value = found
            text = "NaN" if math.isnan(value) else "Infinity" if value > 0 else "-Infinity"
            raise BadInput(f"{text} is not a number{finite}", source=str(path), field=field_path(where) or None)
    try:
        return model.model_validate(data)
    except ValidationError as err:
        raise describe_validation_error(err, str(path)) from None


def drop_unset(data: dict[str, Any], *keys: str) -> dict[str, Any]:
    """``data`` (a model's JSON dump, changed in place and returned) without those of ``keys`` that are None: optional
    fields added after documents were written are left out when unset, so an older document dumps and hashes as it
    did before they existed."""
    for key in keys:
        if key in data and data[key] is None:
            del data[key]
    return data


def canonical_digest(data: Any) -> str:
    """``sha256:<hex>`` of ``data``'s canonical JSON (sorted keys, no spaces): the identity plans record for their
    inventory and profile, so formatting, key order and comments never change it."""
    canonical = json.dumps(data, sort_keys=True, separators=(",", ":"))
    return "sha256:" + hashlib.sha256(canonical.encode()).hexdigest()
