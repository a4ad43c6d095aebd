"""Seeded synthetic time series: sines, AR(p), Mackey-Glass, Lorenz and panels of many series.

Every generator takes ``random_state`` (None, an int, a :class:`numpy.random.Generator` or a
:class:`numpy.random.RandomState`): the same int gives the same data, on any machine with the
same numpy. Every generator returns pandas objects indexed by ``n`` regular time stamps from
``start`` with frequency ``freq``; for the differential equations the stamps count samples, and
the model time of sample ``j`` is ``burn_in + j * sample_every * dt``.
"""

from __future__ import annotations

import math
from collections import deque

import numpy as np
import pandas as pd

from ._validation import (
    check_choice,
    check_int,
    check_random_state,
    check_real,
    check_reals,
    finite_output,
    time_index,
)

__all__ = [
    "make_ar",
    "make_lorenz",
    "make_mackey_glass",
    "make_panel",
    "make_sine_mixture",
]

_N_HINT = "Ask for at least one time step."


# integration steps a generator takes at most (pure Python: a few seconds per million, so
# minutes at the cap), and delay values it holds (make_mackey_glass: tau / dt floats): beyond
# them a tiny dt or a huge burn_in / sample_every / tau ran for hours or exhausted memory
# without a word
MAX_STEPS = 100_000_000
MAX_DELAY_STEPS = 10_000_000


def _check_steps(n_steps, func, what, limit=MAX_STEPS, unit="integration steps", fix=None):
    """A teaching error where ``n_steps`` integration steps (or delay values) exceed
    ``limit``; ``what`` says which parameters ask for them."""
    if n_steps > limit:
        fix = fix or "raise dt, or lower the parameters that multiply the steps"
        shown = f"{n_steps:.3g}"
        if float(shown) <= limit:  # rounded onto the limit: 1e+08 "more than 100,000,000"
            shown = f"{int(n_steps):,}" if float(n_steps).is_integer() else repr(n_steps)
        raise ValueError(f"{func} would take {shown} {unit} ({what}), more than {limit:,}: {fix}.")


def _check_n(n, func):
    """More than :data:`MAX_STEPS` time steps: numpy's MemoryError, or pandas' error for
    dates past 2262, before the cap on the work behind them was ever reached."""
    _check_steps(n, func, "n", unit="time steps", fix="ask for fewer steps")


def _steps_per(duration, dt, name, func, *, low=0):
    """``duration / dt`` as an int, or a teaching error when it is not a whole number."""
    steps = round(duration / dt)
    if steps < low or not math.isclose(steps * dt, duration, rel_tol=1e-9, abs_tol=1e-12):
        raise ValueError(
            f"The {name!r} parameter of {func} must be a whole multiple of dt={dt!r}"
            f"{' (at least one step)' if low else ''}. Got {name}={duration!r}, which is "
            f"{duration / dt:.6g} steps. Choose {name} and dt so that {name} / dt is a whole "
            f"number, e.g. {name}={max(steps, low) * dt:.6g}."
        )
    return steps


def auto_burn_in(radius: float, n: int) -> int:
    """``make_ar``'s burn-in where none is given: until the start's influence (decaying like
    ``radius**t``) is below 1e-8, at least 100 and at most 1,000,000 steps, and within the
    step cap where ``n`` leaves room (``n = 1e8`` itself was refused for the 100 steps of a
    burn-in the user never asked for).

    >>> auto_burn_in(0.8, 500), auto_burn_in(0.99, 500), auto_burn_in(0.8, MAX_STEPS - 40)
    (100, 1833, 40)
    """
    decay = math.ceil(math.log(1e-8) / math.log(radius)) if radius > 0 else 0
    return max(0, min(max(100, decay), 1_000_000, MAX_STEPS - n))


def make_sine_mixture(
    n=500,
    *,
    periods=(12.0, 50.0),
    amplitudes=None,
    phases=None,
    noise=0.1,
    start="2000-01-01",
    freq="D",
    random_state=None,
):
    r"""A sum of sines with Gaussian noise.

    .. math::

        y_t = \sum_{k=1}^{K} a_k \sin\left(\frac{2 \pi t}{P_k} + \varphi_k\right)
              + \sigma \varepsilon_t, \qquad t = 0, \dots, n - 1,

    with :math:`\varepsilon_t` independent standard normal. The periodogram of ``y`` peaks at
    the frequencies :math:`1 / P_k` (exactly so when ``n`` is a multiple of :math:`P_k`).

    Parameters
    ----------
    n : int, default=500
        Number of time steps.
    periods : float or sequence of float, default=(12.0, 50.0)
        Periods :math:`P_k`, in time steps, each >= 2 (a shorter period cannot be seen in
        samples one step apart). They need not be integers.
    amplitudes : float or sequence of float, default=None
        Amplitudes :math:`a_k`, one per period; None gives 1.0 for each.
    phases : float or sequence of float, default=None
        Phases :math:`\varphi_k` in radians, one per period; None draws each uniformly from
        :math:`[0, 2\pi)`.
    noise : float, default=0.1
        Standard deviation :math:`\sigma` of the noise, >= 0.
    start : str or datetime-like, default="2000-01-01"
        First time stamp, rolled forward onto the ``freq`` grid as :func:`pandas.date_range`
        does (with ``freq="W"``, weeks ending on Sunday, 2000-01-01 gives 2000-01-02).
    freq : str, default="D"
        pandas frequency alias of the index.
    random_state : int, numpy.random.Generator, numpy.random.RandomState or None, default=None
        Seeds the phases (when drawn) and the noise. An int gives reproducible data.

    Returns
    -------
    y : pandas.Series of float64, shape (n,)
        Named ``'y'``, indexed by a ``DatetimeIndex`` named ``'time'`` with ``freq``.

    Examples
    --------
    >>> import numpy as np
    >>> from tsrnn.datasets import make_sine_mixture
    >>> y = make_sine_mixture(240, periods=(12, 60), amplitudes=(2.0, 1.0), random_state=0)
    >>> y.shape, y.index.freqstr
    ((240,), 'D')
    >>> power = np.abs(np.fft.rfft(y.to_numpy())) ** 2
    >>> float(240 / np.argmax(power))
    12.0
    """
    func = "make_sine_mixture"
    n = check_int(n, "n", func, low=1, hint=_N_HINT)
    _check_n(n, func)
    periods = check_reals(
        periods,
        "periods",
        func,
        low=2.0,
        hint="Give one or more periods of at least 2 steps: a shorter period aliases to a "
        "longer one in the samples.",
    )
    k = periods.size

    def per_period(value, name, default):
        if value is None:
            return default
        array = check_reals(value, name, func, hint=f"Give one value per period ({k}).")
        if array.size == 1:
            return np.full(k, array[0])
        if array.size != k:
            raise ValueError(
                f"The {name!r} parameter of {func} must have one value per period: "
                f"got {array.size} value(s) for {k} period(s). Pass {k} values, a single "
                f"value for all, or None."
            )
        return array

    amplitudes = per_period(amplitudes, "amplitudes", np.ones(k))
    noise = check_real(noise, "noise", func, low=0.0, hint="Use noise=0 for pure sines.")
    index = time_index(n, start, freq, func)
    rng = check_random_state(random_state, func)
    phases = per_period(phases, "phases", None)
    if phases is None:
        phases = rng.uniform(0.0, 2.0 * np.pi, size=k)

    t = np.arange(n, dtype=np.float64)
    # (n, K) @ (K,) -> (n,)
    # overflow is refused just below, naming the parameters: not numpy's RuntimeWarning first
    with np.errstate(over="ignore", invalid="ignore"):
        values = np.sin(2.0 * np.pi * t[:, None] / periods + phases) @ amplitudes
        if noise > 0:
            values += noise * rng.standard_normal(n)
    finite_output(values, func, "amplitudes or noise")
    return pd.Series(values, index=index, name="y")


def make_ar(
    n=500,
    *,
    phi=(0.8,),
    sigma=1.0,
    mean=0.0,
    burn_in=None,
    start="2000-01-01",
    freq="D",
    random_state=None,
):
    r"""A stationary autoregressive process AR(p) with Gaussian innovations.

    .. math::

        y_t - \mu = \sum_{i=1}^{p} \phi_i \, (y_{t-i} - \mu) + \sigma \varepsilon_t,

    with :math:`\varepsilon_t` independent standard normal. The process is stationary when
    every root of :math:`1 - \phi_1 z - \dots - \phi_p z^p` lies outside the unit circle
    (for AR(1): :math:`|\phi_1| < 1`); then its mean is :math:`\mu` and, for AR(1), its
    variance is :math:`\sigma^2 / (1 - \phi_1^2)` and its lag-:math:`k` autocorrelation
    :math:`\phi_1^k`. The recursion starts from :math:`y = \mu` and runs ``burn_in`` steps
    before the first returned value, so that the start is forgotten.

    Parameters
    ----------
    n : int, default=500
        Number of time steps.
    phi : float or sequence of float, default=(0.8,)
        Coefficients :math:`\phi_1, \dots, \phi_p`; an empty sequence gives white noise.
    sigma : float, default=1.0
        Standard deviation :math:`\sigma` of the innovations, >= 0.
    mean : float, default=0.0
        Mean :math:`\mu` of the process.
    burn_in : int, default=None
        Steps simulated and discarded before the first returned value. None picks
        :math:`\max(100, \lceil \log 10^{-8} / \log r \rceil)` where :math:`r < 1` is the
        largest modulus of the inverse roots (the start's influence decays like
        :math:`r^t`), at most 1,000,000, and at most what ``n`` leaves of the 1e8-step cap.
    start : str or datetime-like, default="2000-01-01"
        First time stamp, rolled forward onto the ``freq`` grid as :func:`pandas.date_range`
        does (with ``freq="W"``, weeks ending on Sunday, 2000-01-01 gives 2000-01-02).
    freq : str, default="D"
        pandas frequency alias of the index.
    random_state : int, numpy.random.Generator, numpy.random.RandomState or None, default=None
        Seeds the innovations. An int gives reproducible data.

    Returns
    -------
    y : pandas.Series of float64, shape (n,)
        Named ``'y'``, indexed by a ``DatetimeIndex`` named ``'time'`` with ``freq``.

    Raises
    ------
    ValueError
        If ``phi`` does not define a stationary process, or ``n + burn_in`` exceeds
        :data:`MAX_STEPS` (1e8) steps.

    Examples
    --------
    >>> from tsrnn.datasets import make_ar
    >>> y = make_ar(5000, phi=0.8, random_state=0)
    >>> y.shape, round(float(y.autocorr(lag=1)), 1)
    ((5000,), 0.8)
    >>> make_ar(10, phi=(1.2,))
    Traceback (most recent call last):
    ...
    ValueError: phi=(1.2,) does not define a stationary AR(1) process: ...
    """
    func = "make_ar"
    n = check_int(n, "n", func, low=1, hint=_N_HINT)
    _check_n(n, func)
    phi_array = check_reals(phi, "phi", func, min_size=0)
    sigma = check_real(sigma, "sigma", func, low=0.0)
    mean = check_real(mean, "mean", func)
    index = time_index(n, start, freq, func)

    p = phi_array.size
    # Inverse roots of 1 - phi_1 z - ... - phi_p z^p, i.e. eigenvalues of the companion matrix.
    inverse_roots = np.roots(np.r_[1.0, -phi_array]) if p else np.zeros(0)
    radius = float(np.abs(inverse_roots).max()) if p else 0.0
    if radius >= 1.0 - 1e-12:
        worst = inverse_roots[np.argmax(np.abs(inverse_roots))]
        root = 1.0 / worst
        shown = tuple(float(v) for v in phi_array)
        raise ValueError(
            f"phi={shown} does not define a stationary AR({p}) process: the polynomial "
            f"1 - phi_1 z - ... - phi_p z^p has a root z={complex(root):.4g} with "
            f"|z|={abs(root):.4g}, not outside the unit circle, so the series would drift or "
            f"explode instead of fluctuating around its mean. Choose coefficients whose roots "
            f"all have |z| > 1 (for AR(1), |phi| < 1; for AR(2), phi_2 + phi_1 < 1, "
            f"phi_2 - phi_1 < 1 and |phi_2| < 1)."
        )
    if burn_in is None:
        burn_in = auto_burn_in(radius, n)
    else:
        burn_in = check_int(burn_in, "burn_in", func, low=0)
    # a huge burn_in (or n) ran out of memory in numpy, as a MemoryError naming 74 GiB
    _check_steps(n + burn_in, func, "n + burn_in", unit="recursion steps", fix="lower burn_in or n")

    rng = check_random_state(random_state, func)
    with np.errstate(over="ignore", invalid="ignore"):  # refused at the end, by name
        innovations = sigma * rng.standard_normal(n + burn_in)
    # x_t = e_t + sum_i phi_i x_{t-i} from x = 0 before t = 0, as a loop on Python floats
    # (0.1 s per million steps for AR(1), 0.4 s for AR(p > 1)): scipy.signal.lfilter would be
    # faster but takes over a second to import.
    if p == 1:
        c, x = float(phi_array[0]), 0.0
        values = innovations.tolist()
        for t, e in enumerate(values):
            x = c * x + e
            values[t] = x
        innovations = np.asarray(values)
    elif p > 1:
        coefs = phi_array.tolist()
        values = [0.0] * p + innovations.tolist()
        for t in range(p, len(values)):
            x = values[t]
            for i in range(p):
                x += coefs[i] * values[t - 1 - i]
            values[t] = x
        innovations = np.asarray(values[p:])
    with np.errstate(over="ignore", invalid="ignore"):
        values = innovations[burn_in:] + mean
    finite_output(values, func, "sigma or mean")
    return pd.Series(values, index=index, name="y")


def make_mackey_glass(
    n=1000,
    *,
    tau=17.0,
    beta=0.2,
    gamma=0.1,
    n_exp=10.0,
    dt=0.1,
    sample_every=10,
    burn_in=500.0,
    initial=None,
    noise=0.0,
    start="2000-01-01",
    freq="D",
    random_state=None,
):
    r"""The Mackey-Glass delay differential equation, a classic chaotic benchmark.

    .. math::

        \frac{dx}{dt} = \beta \, \frac{x(t - \tau)}{1 + x(t - \tau)^{n}} - \gamma \, x(t),

    with the constant history :math:`x(t) = x_0` for :math:`-\tau \le t \le 0`. With the
    defaults (:math:`\tau = 17`, :math:`\beta = 0.2`, :math:`\gamma = 0.1`, :math:`n = 10`) the
    solution is chaotic and, past the transient, stays within about [0.4, 1.35]; it is positive
    whenever the history is. For small :math:`\tau` it settles at the fixed point
    :math:`x^* = (\beta / \gamma - 1)^{1/n}`.

    **Scheme.** Classical fourth-order Runge-Kutta with fixed step ``dt`` on the grid
    :math:`t_k = k \, dt`; ``tau`` must be a whole multiple of ``dt`` so that the delayed values
    :math:`x(t_k - \tau)` and :math:`x(t_{k+1} - \tau)` are grid values already computed, and
    the delayed value at the half step is their average (linear interpolation). That
    interpolation makes the scheme second-order accurate (halving ``dt`` divides the error by
    about 4); the defaults keep it near 1e-5 over tens of time units. The first
    ``burn_in`` time units are discarded; then every ``sample_every``-th grid value is returned,
    plus independent Gaussian observation noise of standard deviation ``noise``.

    Parameters
    ----------
    n : int, default=1000
        Number of samples returned.
    tau : float, default=17.0
        Delay :math:`\tau` > 0, a whole multiple of ``dt``.
    beta, gamma : float, default=0.2, 0.1
        Production and decay rates, > 0.
    n_exp : float, default=10.0
        Exponent :math:`n` > 0 of the nonlinearity.
    dt : float, default=0.1
        Integration step, > 0.
    sample_every : int, default=10
        Integration steps between returned samples (default: one sample per time unit).
    burn_in : float, default=500.0
        Model time integrated and discarded before the first sample, >= 0, a whole multiple
        of ``dt``.
    initial : float, default=None
        History value :math:`x_0` > 0; None draws it uniformly from [0.5, 1.5).
    noise : float, default=0.0
        Standard deviation of the observation noise, >= 0.
    start : str or datetime-like, default="2000-01-01"
        First time stamp, rolled forward onto the ``freq`` grid as :func:`pandas.date_range`
        does (with ``freq="W"``, weeks ending on Sunday, 2000-01-01 gives 2000-01-02).
    freq : str, default="D"
        pandas frequency alias of the index (the stamps count samples).
    random_state : int, numpy.random.Generator, numpy.random.RandomState or None, default=None
        Seeds :math:`x_0` (when drawn) and the noise. An int gives reproducible data.

    Returns
    -------
    y : pandas.Series of float64, shape (n,)
        Named ``'y'``, indexed by a ``DatetimeIndex`` named ``'time'`` with ``freq``.

    Raises
    ------
    ValueError
        If the integration would take more than :data:`MAX_STEPS` (1e8) steps
        (``burn_in / dt + (n - 1) * sample_every``) or hold more than
        :data:`MAX_DELAY_STEPS` (1e7) delay values (``tau / dt``): minutes of pure-Python
        integration, or memory, for a tiny ``dt``.

    Examples
    --------
    >>> from tsrnn.datasets import make_mackey_glass
    >>> y = make_mackey_glass(300, burn_in=100.0, random_state=0)
    >>> y.shape, bool(y.min() > 0.2), bool(y.max() < 1.5)
    ((300,), True, True)
    """
    func = "make_mackey_glass"
    n = check_int(n, "n", func, low=1, hint=_N_HINT)
    _check_n(n, func)
    tau = check_real(tau, "tau", func, low=0.0, open_low=True)
    beta = check_real(beta, "beta", func, low=0.0, open_low=True)
    gamma = check_real(gamma, "gamma", func, low=0.0, open_low=True)
    n_exp = check_real(n_exp, "n_exp", func, low=0.0, open_low=True)
    dt = check_real(dt, "dt", func, low=0.0, open_low=True)
    every = check_int(sample_every, "sample_every", func, low=1)
    burn_in = check_real(burn_in, "burn_in", func, low=0.0)
    noise = check_real(noise, "noise", func, low=0.0)
    _check_steps(
        tau / dt, func, "tau / dt, held in memory", MAX_DELAY_STEPS, "delay values",
        "lower tau or raise dt",
    )
    _check_steps(
        burn_in / dt + (n - 1) * every, func, "burn_in / dt + (n - 1) * sample_every"
    )
    delay = _steps_per(tau, dt, "tau", func, low=1)
    burn = _steps_per(burn_in, dt, "burn_in", func)
    if initial is not None:
        initial = check_real(
            initial,
            "initial",
            func,
            low=0.0,
            open_low=True,
            hint="The equation keeps x positive only from a positive history.",
        )
    index = time_index(n, start, freq, func)
    rng = check_random_state(random_state, func)
    x = rng.uniform(0.5, 1.5) if initial is None else initial

    def rate(x, lagged):
        return beta * lagged / (1.0 + lagged**n_exp) - gamma * x

    # history[0] is x(t_k - tau), history[-1] is x(t_k).
    history = deque([x] * (delay + 1), maxlen=delay + 1)
    half = 0.5 * dt
    out = np.empty(n)
    n_steps = burn + (n - 1) * every
    next_sample, j = burn, 0
    for k in range(n_steps + 1):
        if k == next_sample:
            out[j] = x
            j += 1
            next_sample += every
            if j == n:
                break
        lag0 = history[0]
        lag1 = history[1] if delay > 1 else x
        lag_half = 0.5 * (lag0 + lag1)
        try:
            k1 = rate(x, lag0)
            k2 = rate(x + half * k1, lag_half)
            k3 = rate(x + half * k2, lag_half)
            k4 = rate(x + dt * k3, lag1)
            x = x + dt / 6.0 * (k1 + 2.0 * k2 + 2.0 * k3 + k4)
        except OverflowError:  # lagged**n_exp past the float range
            x = math.inf
        # The equation keeps x positive and bounded; a step that leaves that range (or turns
        # complex: a negative lagged**n_exp) is the integrator's instability, not the model's.
        if not (isinstance(x, float) and 0.0 <= x < 1e100):
            raise ValueError(
                f"{func} diverged: the Runge-Kutta step dt={dt!r} is too large for these "
                f"parameters (the state left [0, 1e100) after {k + 1} steps, at {x!r}). Use a "
                "smaller dt, e.g. dt=0.1 (the default), with gamma * dt well below 1."
            )
        history.append(x)
    if noise > 0:
        with np.errstate(over="ignore", invalid="ignore"):  # refused below, by name
            out += noise * rng.standard_normal(n)
    finite_output(out, func, "noise")
    return pd.Series(out, index=index, name="y")


def make_lorenz(
    n=1000,
    *,
    sigma=10.0,
    rho=28.0,
    beta=8.0 / 3.0,
    dt=0.01,
    sample_every=1,
    burn_in=10.0,
    initial=None,
    noise=0.0,
    start="2000-01-01",
    freq="D",
    random_state=None,
):
    r"""The Lorenz (1963) system, three coupled chaotic series.

    .. math::

        \dot x = \sigma (y - x), \qquad
        \dot y = x (\rho - z) - y, \qquad
        \dot z = x y - \beta z.

    With the classical parameters (:math:`\sigma = 10`, :math:`\rho = 28`,
    :math:`\beta = 8/3`) trajectories settle on the butterfly-shaped strange attractor, where
    roughly :math:`|x| < 20`, :math:`|y| < 28` and :math:`0 < z < 50`; for :math:`\rho < 1`
    they decay to the origin.

    **Scheme.** Classical fourth-order Runge-Kutta with fixed step ``dt`` (global error
    :math:`O(dt^4)` over a fixed time span). The first ``burn_in`` time units are discarded;
    then every ``sample_every``-th step is returned, plus independent Gaussian observation noise
    of standard deviation ``noise`` on each coordinate.

    Parameters
    ----------
    n : int, default=1000
        Number of samples returned.
    sigma, rho, beta : float, default=10.0, 28.0, 8/3
        Parameters of the system, > 0.
    dt : float, default=0.01
        Integration step, > 0.
    sample_every : int, default=1
        Integration steps between returned samples.
    burn_in : float, default=10.0
        Model time integrated and discarded before the first sample, >= 0, a whole multiple
        of ``dt``.
    initial : sequence of 3 float, default=None
        Initial state :math:`(x, y, z)`; None draws :math:`x, y` uniformly from [-15, 15)
        and :math:`z` from [5, 40).
    noise : float, default=0.0
        Standard deviation of the observation noise, >= 0.
    start : str or datetime-like, default="2000-01-01"
        First time stamp, rolled forward onto the ``freq`` grid as :func:`pandas.date_range`
        does (with ``freq="W"``, weeks ending on Sunday, 2000-01-01 gives 2000-01-02).
    freq : str, default="D"
        pandas frequency alias of the index (the stamps count samples).
    random_state : int, numpy.random.Generator, numpy.random.RandomState or None, default=None
        Seeds the initial state (when drawn) and the noise. An int gives reproducible data.

    Returns
    -------
    frame : pandas.DataFrame of float64, shape (n, 3)
        Columns ``x``, ``y``, ``z``, indexed by a ``DatetimeIndex`` named ``'time'`` with
        ``freq``.

    Raises
    ------
    ValueError
        If the integration would take more than :data:`MAX_STEPS` (1e8) steps
        (``burn_in / dt + (n - 1) * sample_every``).

    Examples
    --------
    >>> from tsrnn.datasets import make_lorenz
    >>> frame = make_lorenz(500, random_state=0)
    >>> frame.shape, frame.columns.tolist()
    ((500, 3), ['x', 'y', 'z'])
    >>> bool(frame["x"].abs().max() < 25 and frame["z"].between(0, 55).all())
    True
    """
    func = "make_lorenz"
    n = check_int(n, "n", func, low=1, hint=_N_HINT)
    _check_n(n, func)
    sigma = check_real(sigma, "sigma", func, low=0.0, open_low=True)
    rho = check_real(rho, "rho", func, low=0.0, open_low=True)
    beta = check_real(beta, "beta", func, low=0.0, open_low=True)
    dt = check_real(dt, "dt", func, low=0.0, open_low=True)
    every = check_int(sample_every, "sample_every", func, low=1)
    burn_in = check_real(burn_in, "burn_in", func, low=0.0)
    noise = check_real(noise, "noise", func, low=0.0)
    _check_steps(
        burn_in / dt + (n - 1) * every, func, "burn_in / dt + (n - 1) * sample_every"
    )
    burn = _steps_per(burn_in, dt, "burn_in", func)
    if initial is not None:
        initial = check_reals(initial, "initial", func, hint="Pass three numbers (x, y, z).")
        if initial.size != 3:
            raise ValueError(
                f"The 'initial' parameter of {func} must hold 3 values (x, y, z). "
                f"Got {initial.size} instead."
            )
    index = time_index(n, start, freq, func)
    rng = check_random_state(random_state, func)
    if initial is None:
        initial = rng.uniform([-15.0, -15.0, 5.0], [15.0, 15.0, 40.0])
    x, y, z = (float(v) for v in initial)

    def rate(x, y, z):
        return sigma * (y - x), x * (rho - z) - y, x * y - beta * z

    half, sixth = 0.5 * dt, dt / 6.0
    out = np.empty((n, 3))
    n_steps = burn + (n - 1) * every
    next_sample, j = burn, 0
    for k in range(n_steps + 1):
        if k == next_sample:
            out[j] = x, y, z
            j += 1
            next_sample += every
            if j == n:
                break
        ax, ay, az = rate(x, y, z)
        bx, by, bz = rate(x + half * ax, y + half * ay, z + half * az)
        cx, cy, cz = rate(x + half * bx, y + half * by, z + half * bz)
        dx, dy, dz = rate(x + dt * cx, y + dt * cy, z + dt * cz)
        x += sixth * (ax + 2.0 * bx + 2.0 * cx + dx)
        y += sixth * (ay + 2.0 * by + 2.0 * cy + dy)
        z += sixth * (az + 2.0 * bz + 2.0 * cz + dz)
        if not math.isfinite(x + y + z):
            raise ValueError(
                f"{func} diverged: the Runge-Kutta step dt={dt!r} is too large for these "
                f"parameters (the state overflowed after {k + 1} steps). Use a smaller dt, "
                "e.g. dt=0.01 (the default)."
            )
    if noise > 0:
        with np.errstate(over="ignore", invalid="ignore"):  # refused below, by name
            out += noise * rng.standard_normal((n, 3))
    finite_output(out, func, "noise")
    return pd.DataFrame(out, index=index, columns=["x", "y", "z"])


def make_panel(
    n_series=100,
    *,
    min_length=50,
    max_length=200,
    period=7.0,
    noise=0.1,
    align="end",
    start="2000-01-01",
    freq="D",
    random_state=None,
):
    r"""Many related series of different lengths and starts, in the long (panel) layout.

    All series live on one calendar of ``max_length`` steps :math:`s = 0, \dots, S - 1`
    (:math:`S` = ``max_length``) and share a seasonal pattern; each has its own level, trend,
    seasonal amplitude and noise:

    .. math::

        y_{i,s} = \ell_i \left(1 + b_i \frac{s}{S} + a_i \sin\left(\frac{2 \pi s}{P}
                  + \varphi\right) + \sigma u_{i,s}\right), \qquad
        u_{i,s} = 0.5 \, u_{i,s-1} + \sqrt{0.75} \, \varepsilon_{i,s},

    with :math:`\log_{10} \ell_i \sim U(0, 2)`, :math:`b_i \sim U(-0.5, 0.5)`,
    :math:`a_i \sim U(0.1, 0.5)`, one phase :math:`\varphi \sim U(0, 2\pi)` for all series,
    and :math:`u_i` a stationary AR(1) of unit variance driven by independent standard normal
    :math:`\varepsilon`. Series :math:`i` is observed on :math:`L_i \sim U\{` ``min_length``,
    ..., ``max_length`` :math:`\}` consecutive steps, placed on the calendar by ``align``.
    Everything is drawn at once with array operations, so 10,000 series of 200 steps take a
    fraction of a second.

    Parameters
    ----------
    n_series : int, default=100
        Number of series.
    min_length, max_length : int, default=50, 200
        Bounds (inclusive) of the series lengths, 1 <= min_length <= max_length.
    period : float or None, default=7.0
        Seasonal period :math:`P` in steps, >= 2; None for no season (:math:`a_i = 0`).
    noise : float, default=0.1
        Relative noise level :math:`\sigma`, >= 0.
    align : {"end", "start", "random"}, default="end"
        ``"end"``: every series ends on the last step of the calendar (starts differ), the
        usual layout for forecasting them all from one point; ``"start"``: every series starts
        on the first step; ``"random"``: each starts at a random step that keeps it inside the
        calendar.
    start : str or datetime-like, default="2000-01-01"
        First time stamp of the calendar, rolled forward onto the ``freq`` grid as
        :func:`pandas.date_range` does.
    freq : str, default="D"
        pandas frequency alias of the calendar.
    random_state : int, numpy.random.Generator, numpy.random.RandomState or None, default=None
        Seeds everything. An int gives reproducible data.

    Returns
    -------
    y : pandas.Series of float64, shape (sum of the lengths,)
        Named ``'y'``, with a two-level ``MultiIndex``: ``'series'`` (int ids 0 to
        ``n_series - 1``) and ``'time'`` (a ``DatetimeIndex`` level on the calendar), sorted by
        series then time. A ``MultiIndex`` level cannot carry ``freq``; the time stamps of each
        series are consecutive steps of ``freq``.

    Examples
    --------
    >>> from tsrnn.datasets import make_panel
    >>> y = make_panel(1000, min_length=20, max_length=60, random_state=0)
    >>> lengths = y.groupby(level="series").size()
    >>> len(lengths), int(lengths.min()) >= 20, int(lengths.max()) <= 60
    (1000, True, True)
    >>> ends = y.index.to_frame(index=False).groupby("series")["time"].max()
    >>> ends.nunique()
    1
    """
    func = "make_panel"
    n_series = check_int(n_series, "n_series", func, low=1, hint="Ask for at least one series.")
    min_length = check_int(min_length, "min_length", func, low=1)
    max_length = check_int(max_length, "max_length", func, low=1)
    if min_length > max_length:
        raise ValueError(
            f"min_length={min_length} is greater than max_length={max_length} in {func}: the "
            f"lengths are drawn from [min_length, max_length]. Set min_length <= max_length "
            f"(equal values give series of one length)."
        )
    if period is not None:
        period = check_real(
            period,
            "period",
            func,
            low=2.0,
            hint="Use a period of at least 2 steps, or period=None for no season.",
        )
    noise = check_real(noise, "noise", func, low=0.0)
    align = check_choice(align, "align", func, ("end", "start", "random"))
    # every series is drawn on the whole calendar at once: (n_series, max_length) values
    _check_steps(
        n_series * max_length,
        func,
        "n_series * max_length",
        unit="values",
        fix="lower n_series or max_length",
    )
    calendar = time_index(max_length, start, freq, func, steps="max_length")
    rng = check_random_state(random_state, func)

    # Per-series parameters, shape (N, 1) so they broadcast over the calendar (N, S).
    level = 10.0 ** rng.uniform(0.0, 2.0, size=(n_series, 1))
    slope = rng.uniform(-0.5, 0.5, size=(n_series, 1))
    season_amp = rng.uniform(0.1, 0.5, size=(n_series, 1))
    phase = rng.uniform(0.0, 2.0 * np.pi)
    lengths = rng.integers(min_length, max_length + 1, size=n_series)
    if align == "end":
        offsets = max_length - lengths
    elif align == "start":
        offsets = np.zeros(n_series, dtype=np.int64)
    else:
        offsets = rng.integers(0, max_length - lengths + 1)

    steps = np.arange(max_length, dtype=np.float64)
    shape = 1.0 + slope * (steps / max_length)
    if period is not None:
        shape += season_amp * np.sin(2.0 * np.pi * steps / period + phase)
    if noise > 0:
        # Stationary unit-variance AR(1) along time, all series at once: the loop runs over
        # the S steps of the calendar, each step one vector operation over the N series.
        u = rng.standard_normal((max_length, n_series))  # (S, N): each step is contiguous
        u[1:] *= math.sqrt(0.75)
        for s in range(1, max_length):
            u[s] += 0.5 * u[s - 1]
        with np.errstate(over="ignore", invalid="ignore"):  # refused at the end, by name
            shape += noise * u.T
    with np.errstate(over="ignore", invalid="ignore"):
        values = level * shape

    observed = (steps >= offsets[:, None]) & (steps < (offsets + lengths)[:, None])
    series_codes, time_codes = np.nonzero(observed)  # row-major: sorted by series, then time
    index = pd.MultiIndex(
        levels=[pd.RangeIndex(n_series, name="series"), calendar],
        codes=[series_codes, time_codes],
        names=["series", "time"],
        verify_integrity=False,
    )
    values = values[observed]
    finite_output(values, func, "noise")
    return pd.Series(values, index=index, name="y")
