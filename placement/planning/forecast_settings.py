"""The checks of a forecast's settings, one wording for ``plan --forecast`` and ``watch --forecast``.

Its own module, importing nothing heavy: a plan's request checks them before anything else is imported."""

from __future__ import annotations

from placement.errors import BadInput


def check_forecast_settings(horizon_s: float, level: float, season_s: float | None) -> None:
    """``horizon_s`` and ``season_s`` in seconds, ``level`` the interval's coverage as a fraction."""
    if not horizon_s > 0:
        raise BadInput("must be a duration above 0 (e.g. 2h, 90min)", field="--horizon")
    if not 0 < level < 1:
        raise BadInput("must lie between 0 and 100 % (e.g. 80)", field="--forecast-level")
    if season_s is not None and not season_s > 0:
        raise BadInput("must be a duration above 0 (e.g. 8h, 24min)", field="--season")
