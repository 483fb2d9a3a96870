"""Named WAN profiles: YAML files in the repository's ``netem/`` directory (format: ``netem/README.md``).

A profile gives a link's figures (bandwidth, delay, jitter, loss, correlation) under a name such as ``lte``, so an
experiment can say "run this over 3G" without editing the inventory. The directory is ``$PLACEMENT_NETEM_DIR`` when set
(the older ``$PLACEMENT_NETEM_PROFILES`` still works), else the copy an installed package ships, else the clone's
``netem/`` (:func:`placement.resources.repo_dir`).
"""

from __future__ import annotations

import re
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from placement.errors import BadInput
from placement.loading import load_model
from placement.resources import override_var, repo_dir
from placement.units import Millis, Percent, RateMbit

ENV_VAR = override_var("netem")
PROFILE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")  # a file stem: no '/' or '..' can leave the directory
SUFFIXES = (".yaml", ".yml")


class WanProfile(BaseModel):
    """A WAN link's figures; every stage reads them as Mbit/s, ms and percent."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    name: str | None = Field(None, description="defaults to the file name without .yaml")
    description: str = ""
    bandwidth: RateMbit = Field(description="Mbit/s after parsing; '50mbit' accepted")
    delay: Millis = Field(0.0, description="one-way delay added on the edge's egress, ms")
    jitter: Millis = Field(0.0, description="ms")
    loss: Percent = Field(0.0, description="percent")
    correlation: Percent = Field(0.0, description="percent; netem correlation for jitter and loss")


def profiles_dir() -> Path:
    return repo_dir("netem")


def list_profiles(directory: Path | None = None) -> list[str]:
    d = directory or profiles_dir()
    if not d.is_dir():
        return []
    return sorted(p.stem for p in d.iterdir() if p.suffix in SUFFIXES and PROFILE_NAME.match(p.stem))


def load_profile(name: str, directory: Path | None = None, *, field: str | None = None) -> WanProfile:
    """The profile ``name`` from ``directory``; unknown names and malformed files are one-line BadInput errors."""
    d = directory or profiles_dir()
    if not d.is_dir():
        raise BadInput(f"WAN profile directory does not exist (set ${ENV_VAR})", source=str(d), field=field)
    candidates = [d / f"{name}{suffix}" for suffix in SUFFIXES] if PROFILE_NAME.match(name) else []
    path = next((p for p in candidates if p.is_file()), None)
    if path is None:
        known = ", ".join(list_profiles(d)) or "none"
        raise BadInput(f"unknown WAN profile {name!r} (known: {known})", source=str(d), field=field)
    profile = load_model(path, WanProfile, finite="")
    if profile.name is not None and profile.name != name:
        raise BadInput(f"profile is named {profile.name!r} but its file says {name!r}", source=str(path), field="name")
    return profile.model_copy(update={"name": name})
