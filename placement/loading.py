"""Reading YAML/JSON documents into pydantic models, with one-line errors that name the file and field."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ValidationError

from placement.errors import BadInput

M = TypeVar("M", bound=BaseModel)


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


def describe_validation_error(err: ValidationError, source: str) -> BadInput:
    """Turn pydantic's error list into one BadInput naming the first failing field (and how many more)."""
    errors = err.errors(include_url=False)
    first = errors[0]
    ctx_error = (first.get("ctx") or {}).get("error")
    field = field_path(first["loc"])
    if isinstance(ctx_error, FieldError):  # raised by a model validator: its field is relative to that model's place
        field = f"{field}.{ctx_error.field}" if field else ctx_error.field
    message = str(ctx_error) if isinstance(ctx_error, ValueError) else first["msg"]
    if first["type"] == "missing":
        message = "required field is missing"
    elif first["type"] == "extra_forbidden":
        message = "unknown field"
    if len(errors) > 1:
        message += f" (and {len(errors) - 1} more problem{'s' if len(errors) > 2 else ''})"
    return BadInput(message, source=source, field=field or None)


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
        return yaml.safe_load(text)
    except json.JSONDecodeError as exc:
        raise BadInput(f"invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}", source=str(p)) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1} column {mark.column + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or "syntax error"
        raise BadInput(f"invalid YAML{where}: {problem}", source=str(p)) from None


def load_model(path: str | Path, model: type[M]) -> M:
    """Read ``path`` and validate it as ``model``; every failure is a BadInput naming the file and field."""
    data = read_document(path)
    if not isinstance(data, dict):
        raise BadInput(f"expected a mapping at the top level, found {type(data).__name__}", source=str(path))
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
