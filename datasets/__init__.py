"""Bundled real time series and seeded synthetic generators.

Loaders (``load_*``) read files shipped inside the package, never the network, and return
pandas objects with a time index and its frequency:

- :func:`load_air_passengers`: monthly airline passengers, 1949-1960 (144 values);
- :func:`load_sunspots`: monthly mean sunspot numbers, 1749-2013 (3177 values);
- :func:`load_electricity_demand`: half-hourly demand in Victoria, Australia, 2014, with
  temperature and work-day covariates (17520 rows);
- :func:`load_us_change`: quarterly changes of five US economic series, 1970-2016 (187 rows);
- :func:`load_tourism_nights`: quarterly visitor nights in 20 Australian regions, 1998-2016, as
  a long panel (20 series of 76 quarters).

Generators (``make_*``) take ``random_state`` and document their equations:
:func:`make_sine_mixture`, :func:`make_ar`, :func:`make_mackey_glass`, :func:`make_lorenz` and
:func:`make_panel` (many series of different lengths, fast enough for 10,000 series).

Sources, units and licences of the bundled files are in ``datasets/README.md``.

Examples
--------
>>> from tsrnn.datasets import load_air_passengers, make_ar
>>> load_air_passengers().index.freqstr
'MS'
>>> make_ar(3, random_state=0).equals(make_ar(3, random_state=0))
True
"""

from ._generators import make_ar, make_lorenz, make_mackey_glass, make_panel, make_sine_mixture
from ._loaders import (
    load_air_passengers,
    load_electricity_demand,
    load_sunspots,
    load_tourism_nights,
    load_us_change,
)

__all__ = [
    "load_air_passengers",
    "load_electricity_demand",
    "load_sunspots",
    "load_tourism_nights",
    "load_us_change",
    "make_ar",
    "make_lorenz",
    "make_mackey_glass",
    "make_panel",
    "make_sine_mixture",
]
