"""Parsing of the human units used in inventories and WAN profiles.

Rates follow tc's spelling (``50mbit``, ``512kbit``, ``1gbit``; ``Mbit/s`` and ``mbps`` are accepted too) and are
returned in Mbit/s. Times (``50ms``, ``1s``, ``200us``) are returned in milliseconds, sizes (``4GiB``, ``512MiB``,
``4G``) in MiB (a link's burst in bytes), percentages (``0.5%``) as a percentage number. A bare number means the
returned unit.
"""

from __future__ import annotations

import math
import re
from typing import Annotated, TypeGuard

from pydantic import BeforeValidator

_NUMBER = r"(?P<value>[0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)\s*"

_RATE_UNITS = {  # -> Mbit/s
    "bit": 1e-6,
    "kbit": 1e-3,
    "mbit": 1.0,
    "gbit": 1e3,
    "tbit": 1e6,
    "bps": 8e-6,
    "kbps": 8e-3,
    "mbps": 8.0,
    "gbps": 8e3,  # tc: bps = bytes per second
    "kibit": 1024 / 1e6,
    "mibit": 1024**2 / 1e6,
    "gibit": 1024**3 / 1e6,
}
_BYTES_RATE_UNITS = frozenset({"bps", "kbps", "mbps", "gbps"})
_RATE_ALIASES = {"mbit/s": "mbit", "kbit/s": "kbit", "gbit/s": "gbit", "bit/s": "bit"}
_TIME_UNITS = {"us": 1e-3, "usec": 1e-3, "ms": 1.0, "msec": 1.0, "s": 1000.0, "sec": 1000.0}
_SIZE_UNITS = {  # -> MiB
    "b": 1 / 1024**2,
    "k": 1 / 1024,
    "kb": 1e3 / 1024**2,
    "kib": 1 / 1024,
    "m": 1.0,
    "mb": 1e6 / 1024**2,
    "mib": 1.0,
    "g": 1024.0,
    "gb": 1e9 / 1024**2,
    "gib": 1024.0,
    "t": 1024.0**2,
    "tib": 1024.0**2,
}
_SIZE_BYTES = {unit: mib * 1024**2 for unit, mib in _SIZE_UNITS.items()}


def _parse(
    text: object, units: dict[str, float], what: str, example: str, aliases: dict[str, str] | None = None
) -> float:
    if isinstance(text, bool):
        raise ValueError(f"{text!r} is not a {what} like {example!r}")
    if isinstance(text, (int, float)):
        value = float(text)
    else:
        m = re.fullmatch(_NUMBER + r"(?P<unit>[A-Za-z/%]*)", str(text).strip())
        if not m:
            raise ValueError(f"{text!r} is not a {what} like {example!r}")
        unit = m.group("unit").lower()
        unit = (aliases or {}).get(unit, unit)
        if unit and unit not in units:
            raise ValueError(f"{text!r} has unknown unit {m.group('unit')!r} for a {what} (e.g. {example!r})")
        value = float(m.group("value")) * (units[unit] if unit else 1.0)
    if not math.isfinite(value) or value < 0:
        raise ValueError(f"{text!r} must be a finite, non-negative {what}")
    return value


# Flink's duration spelling in its configuration: a number and an optional unit; a bare number is milliseconds
_FLINK_DURATION_MS = {
    "": 1.0,
    "ms": 1.0,
    "milli": 1.0,
    "millis": 1.0,
    "millisecond": 1.0,
    "milliseconds": 1.0,
    "s": 1000.0,
    "sec": 1000.0,
    "secs": 1000.0,
    "second": 1000.0,
    "seconds": 1000.0,
    "min": 60_000.0,
    "m": 60_000.0,
    "minute": 60_000.0,
    "minutes": 60_000.0,
}


def flink_duration_ms(text: object) -> float | None:
    """A Flink configuration duration in ms (``'2000'`` -> 2000.0, ``'10 s'`` -> 10000.0, ``'-1'`` -> -1.0); None
    when it is not one."""
    m = re.fullmatch(r"\s*(-?[0-9.]+)\s*([a-z]*)\s*", str(text or "").lower())
    if not m or m.group(2) not in _FLINK_DURATION_MS:
        return None
    try:
        return float(m.group(1)) * _FLINK_DURATION_MS[m.group(2)]
    except ValueError:  # "1.2.3"
        return None


def parse_rate_mbit(text: object) -> float:
    """``'50mbit'`` -> 50.0 (Mbit/s)."""
    return _parse(text, _RATE_UNITS, "rate", "50mbit", _RATE_ALIASES)


def is_bytes_rate(text: object) -> TypeGuard[str]:
    """Is ``text`` a rate in one of tc's bytes-per-second units (``50mbps`` = 50 MB/s = 400 Mbit/s)? Valid, and what
    tc means, but most people writing ``mbps`` mean megabits: ``placement plan`` and ``placement netem apply`` warn
    about it (:func:`placement.inventory.link_rate_warnings`)."""
    m = re.fullmatch(_NUMBER + r"(?P<unit>[A-Za-z/%]*)", str(text).strip()) if isinstance(text, str) else None
    return m is not None and m.group("unit").lower() in _BYTES_RATE_UNITS


def bytes_rate_note(where: str, text: str) -> str:
    """The warning for a rate in tc's bytes-per-second units (:func:`is_bytes_rate`), ``where`` naming it."""
    return (
        f"{where}: {text!r} is in tc's bytes per second ({parse_rate_mbit(text):g} Mbit/s); "
        f"write '{text.lower().replace('bps', 'bit')}' for megabits"
    )


def parse_time_ms(text: object) -> float:
    """``'50ms'`` -> 50.0, ``'1s'`` -> 1000.0 (milliseconds)."""
    return _parse(text, _TIME_UNITS, "time", "50ms")


_DURATION_UNITS = {**_TIME_UNITS, "min": 60_000.0, "h": 3_600_000.0, "d": 86_400_000.0}


def parse_duration_ms(text: object) -> float:
    """``'10s'`` -> 10000.0, ``'5min'`` -> 300000.0, ``'7d'`` -> 604800000.0 (milliseconds; a bare number is ms):
    :func:`parse_time_ms` with minutes, hours and days, for timeouts rather than link delays."""
    return _parse(text, _DURATION_UNITS, "duration", "10s")


def parse_size_mib(text: object) -> float:
    """``'4GiB'`` -> 4096.0 (MiB)."""
    return _parse(text, _SIZE_UNITS, "size", "4GiB")


def parse_size_bytes(text: object) -> float:
    """``'4KiB'`` -> 4096.0 (bytes); a bare number is bytes."""
    return _parse(text, _SIZE_BYTES, "size", "4KiB")


def parse_percent(text: object) -> float:
    """``'0.5%'`` -> 0.5; a percentage must lie in [0, 100]."""
    value = _parse(text, {"%": 1.0}, "percentage", "0.5%")
    if value > 100:
        raise ValueError(f"{text!r} is more than 100%")
    return value


def format_rate(mbit: float) -> str:
    """Mbit/s -> tc's spelling, exact to the kbit (``50.0`` -> ``'50mbit'``, ``0.5`` -> ``'500kbit'``)."""
    kbit = round(mbit * 1000)
    return f"{kbit // 1000}mbit" if kbit % 1000 == 0 else f"{kbit}kbit"


def format_time(ms: float) -> str:
    """milliseconds -> tc's spelling (``50.0`` -> ``'50ms'``, ``0.25`` -> ``'250us'``)."""
    us = round(ms * 1000)
    return f"{us // 1000}ms" if us % 1000 == 0 else f"{us}us"


MAX_LINK_MBIT = (
    1e7  # 10 Tbit/s: beyond any network link; past it a figure is a typo ('1e30gbit'), and it overflows the solvers
)


def parse_positive_rate_mbit(text: object) -> float:
    mbit = parse_rate_mbit(text)
    if mbit <= 0:
        raise ValueError("bandwidth must be positive")
    if mbit > MAX_LINK_MBIT:
        raise ValueError(f"{text!r} is more than 10tbit: no link is that fast")
    return mbit


# Field types for pydantic models: accept the human spelling, store the number in the named unit.
RateMbit = Annotated[float, BeforeValidator(parse_positive_rate_mbit)]  # '50mbit' -> 50.0
Millis = Annotated[float, BeforeValidator(parse_time_ms)]  # '50ms' -> 50.0
DurationMs = Annotated[float, BeforeValidator(parse_duration_ms)]  # '10s' -> 10000.0, '7d' -> 604800000.0
Percent = Annotated[float, BeforeValidator(parse_percent)]  # '0.5%' -> 0.5
MiB = Annotated[float, BeforeValidator(parse_size_mib)]  # '4GiB' -> 4096.0
Bytes = Annotated[float, BeforeValidator(parse_size_bytes)]  # '4KiB' -> 4096.0


def significant(x: float) -> str:
    """71.3 for large figures, 0.45 for small ones: three significant digits at most."""
    return f"{x:.1f}" if abs(x) >= 10 else f"{x:.3g}"


def figures_apart(a: float, b: float, digits: int = 2, style: str = "f") -> tuple[str, str]:
    """Both figures with ``digits`` digits (``style`` "f": after the point, "g": significant), or with as many more as
    it takes to tell them apart: a shortfall of 0.003 cores must not read "needs 0.80, 0.80 usable"."""
    for d in range(digits, digits + 9):
        x, y = f"{a:.{d}{style}}", f"{b:.{d}{style}}"
        if x != y:
            break
    return x, y


def needed_and_usable_mbit(needed: float, usable: float) -> tuple[str, str]:
    """A link's need and what it may use, each to three significant digits unless that reads the same."""
    x, y = significant(needed), significant(usable)
    return (x, y) if x != y else figures_apart(needed, usable, 2)
