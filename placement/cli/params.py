"""Option types shared by the commands."""

from __future__ import annotations

import json
import math
from urllib.parse import urlparse

import click


class HttpUrl(click.ParamType):
    """An http(s) URL with a host. Without a scheme, requests said only ``InvalidSchema: No connection adapters were
    found``; this names the option and the fix."""

    name = "URL"

    def convert(self, value, param, ctx):
        text = str(value).strip()
        parsed = urlparse(text)
        if parsed.scheme not in ("http", "https") or not parsed.netloc:
            self.fail(f"{text!r} is not an http(s) URL; did you mean 'http://{text.split('://')[-1]}'?", param, ctx)
        return text


HTTP_URL = HttpUrl()


def nonempty_path(ctx, param, value):
    """``--out ''`` is the current directory to pathlib: refused, it would write (or replace) files in it."""
    if value is not None and not str(value).strip():
        raise click.BadParameter(
            "empty: name a file or directory (an empty path is the current directory)", ctx=ctx, param=param
        )
    return value


class RateScale(click.ParamType):
    """One ``--rate-scale`` value: ``X`` (the fleet's) -> (None, X), ``JOB=X`` -> (JOB, X); X a number above 0."""

    name = "[JOB=]X"

    def convert(self, value, param, ctx):
        if isinstance(value, tuple):
            return value
        text = str(value)
        job, eq, number = text.rpartition("=")
        if eq and not job.strip():
            self.fail(f"{text!r}: no job name before '=' (JOB=X, e.g. iot-sensors=1.5)", param, ctx)
        try:
            x = float(number)
        except ValueError:
            x = math.nan
        if not math.isfinite(x) or x <= 0:
            self.fail(
                f"{text!r}: the scale must be a number above 0 (X or JOB=X, e.g. 1.5 or iot-sensors=1.5)", param, ctx
            )
        return (job.strip() if eq else None), x


def horizon_s(text: str, forecast: bool) -> float:
    """``--horizon`` in seconds (``plan --forecast``, ``watch --forecast``): a duration with its unit (a bare number
    would be read as milliseconds); given without ``--forecast`` it is refused, as it would change nothing."""
    from placement.errors import BadInput

    if not forecast:
        if text != "2h":
            raise BadInput("is how far a forecast looks ahead: add --forecast HISTORY", field="--horizon")
        return 7200.0
    return _duration_s(text, "--horizon", "2h, 90min or 1d")


def season_s(text: str | None, forecast: bool) -> float | None:
    """``--season`` in seconds (None: not given, the daily or weekly season is searched for), as ``--horizon``: a
    duration with its unit, refused without ``--forecast``."""
    from placement.errors import BadInput

    if text is None:
        return None
    if not forecast:
        raise BadInput("is the load's cycle a forecast fits: add --forecast HISTORY", field="--season")
    seconds = _duration_s(text, "--season", "24min, 8h or 1d")
    if not seconds > 0:
        raise BadInput("must be a duration above 0 (e.g. 8h, 24min)", field="--season")
    return seconds


def _duration_s(text: str, option: str, examples: str) -> float:
    from placement.errors import BadInput
    from placement.units import parse_duration_ms

    try:
        if not any(c.isalpha() for c in text):
            raise ValueError("give it a unit")
        return parse_duration_ms(text) / 1000
    except ValueError as exc:
        raise BadInput(f"{text!r} is not a duration such as {examples} ({exc})", field=option) from None


def json_option(help: str):
    """``--json``: one spelling and one parameter name (``as_json``) in every command that prints a document."""
    return click.option("--json", "as_json", is_flag=True, help=help)


def quiet_option(help: str):
    """``--quiet/-q``: one spelling in every command; what it keeps (warnings, errors, the last line) is its help's."""
    return click.option("--quiet", "-q", is_flag=True, help=help)


def forecast_options(horizon_help: str):
    """``--horizon``, ``--season`` and ``--forecast-level``: one spelling, default and parsing for ``plan --forecast``
    and ``watch --forecast``; ``horizon_help`` says what the horizon is counted from in that command."""
    options = [
        click.option(
            "--horizon",
            default="2h",
            show_default=True,
            metavar="DURATION",
            help=f"with --forecast: {horizon_help} (e.g. 2h, 90min, 1d)",
        ),
        click.option(
            "--season",
            default=None,
            metavar="DURATION",
            help="with --forecast: the load's cycle when it is not a day or a week (a shift's 8h, a compressed "
            "24min day): fitted as given instead of searched for",
        ),
        click.option(
            "--forecast-level",
            type=click.FloatRange(min=0, max=100, min_open=True, max_open=True),
            default=80.0,
            show_default=True,
            metavar="PCT",
            help="with --forecast: the prediction interval's coverage, whose upper bound is planned for",
        ),
    ]

    def decorate(command):
        for option in reversed(options):
            command = option(command)
        return command

    return decorate


def echo_json(doc: object, default=None) -> None:
    """One JSON document on stdout, as every ``--json`` prints it: indented, "→" kept as it is (not ``\\u2192``).
    ``default``: how to write what JSON has no type for (a status's paths)."""
    click.echo(json.dumps(doc, indent=2, ensure_ascii=False, default=default))
