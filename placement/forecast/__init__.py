"""A source's rate ahead of time: seasonality and trend fitted to its history, with a prediction interval (pure).

:func:`forecast` takes a series of (epoch ms, records/s) and a horizon and returns a :class:`Forecast`: the
point forecast and the interval per step, or — too little history, a series the model cannot fit — a reactive
fallback that says why (``ok`` false, ``reason``), never an exception. What reads a history from disk is
:mod:`placement.collect.sources`; what plans for a forecast is :mod:`placement.planning.forecasting`.
"""

from placement.forecast.model import DAY_S, WEEK_S, Forecast, forecast

__all__ = ["DAY_S", "WEEK_S", "Forecast", "forecast"]
