"""The ``tsrnn`` command line: ``tsrnn forecast`` fits an RNNForecaster and writes a forecast.

Examples
--------
Forecast two years of a bundled dataset and plot it::

    tsrnn forecast --dataset air_passengers --horizon 24 --plot forecast.png

Forecast a CSV file (time stamps in the first column), save the model, reuse it later::

    tsrnn forecast sales.csv --target sales -H 12 -o forecast.csv --save-model sales.joblib
    tsrnn forecast --load-model sales.joblib -H 12

Every option is described by ``tsrnn forecast --help``. Bad input ends with the usage line, a
one-line error message and exit status 2 (argparse's convention), never with a traceback.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import importlib
import os
import sys
import time
import warnings

__all__ = ["build_parser", "main"]

_ESTIMATOR_OPTIONS = (
    # (dest, RNNForecaster parameter)
    ("cell", "cell"),
    ("nonlinearity", "nonlinearity"),
    ("hidden_size", "hidden_size"),
    ("num_layers", "num_layers"),
    ("dropout", "dropout"),
    ("window", "window"),
    ("model_horizon", "horizon"),
    ("strategy", "strategy"),
    ("bptt", "bptt"),
    ("clip_norm", "clip_norm"),
    ("clip_value", "clip_value"),
    ("init", "init"),
    ("optimizer", "optimizer"),
    ("learning_rate", "learning_rate"),
    ("weight_decay", "weight_decay"),
    ("batch_size", "batch_size"),
    ("max_epochs", "max_epochs"),
    ("early_stopping", "early_stopping"),
    ("validation_fraction", "validation_fraction"),
    ("patience", "patience"),
    ("scaler", "scaler"),
    ("dtype", "dtype"),
    ("backend", "backend"),
    ("device", "device"),
    ("n_threads", "n_threads"),
    ("random_state", "random_state"),
)


class _InputError(Exception):
    """Bad input from the user: reported by ``parser.error`` (exit status 2)."""


# --------------------------------------------------------------------------------------------
# argument parsing
# --------------------------------------------------------------------------------------------


def _positive_int(text):
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 1, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 1, got {value}")
    return value


def _window(text):
    if text == "auto":
        return "auto"
    try:
        value = int(text)
    except ValueError:
        value = None
    if value is None or value < 2:
        # a window of one value, centred on its own mean, reads as 0 (the estimator's range)
        raise argparse.ArgumentTypeError(f"expected 'auto' or a whole number >= 2, got {text!r}")
    return value


def _optional_int(text):
    if text.lower() == "none":
        return None
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected a whole number or 'none', got {text!r}"
        ) from None


def _optional_float(text):
    if text.lower() == "none":
        return None
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number or 'none', got {text!r}") from None


_SCALERS = ("standard", "robust", "minmax", "none")


def _scaler(text):
    # checked here, not by choices=: argparse's message listed the None it maps "none" to,
    # which cannot be typed
    if text not in _SCALERS:
        raise argparse.ArgumentTypeError(
            f"invalid choice: {text!r} (choose from {', '.join(map(repr, _SCALERS))})"
        )
    return None if text == "none" else text


class _Columns(list):
    """Column names split from one option's text, which is kept (``raw``)."""

    raw = ""


class _ExtendColumns(argparse.Action):
    """``action='extend'`` for comma-separated columns, keeping each option's own text in
    ``<dest>_raw`` (a column's name may hold commas: see :func:`_rejoin`)."""

    def __call__(self, parser, namespace, values, option_string=None):
        setattr(namespace, self.dest, [*(getattr(namespace, self.dest, None) or []), *values])
        raws = getattr(namespace, self.dest + "_raw", None) or []
        setattr(namespace, self.dest + "_raw", [*raws, values.raw])


def _rejoin(names, columns, raws=None):
    """``names`` (from comma-separated options) with the pieces of a column name that holds
    commas put back together: ``--target "Sales, EUR"`` reads as 'Sales' and 'EUR', which
    are no columns, where 'Sales, EUR' is one. An option whose whole text names a column
    means that column (``raws``: each option's text), even where its pieces name others."""
    if not names:
        return names
    if raws:
        out = []
        for raw in raws:
            whole = raw.strip()
            out += [whole] if whole in columns else _rejoin(_columns(raw), columns)
        return out
    out, i = [], 0
    while i < len(names):
        joined = None
        if names[i] not in columns:
            for j in range(len(names), i + 1, -1):  # the longest run that names a column
                pieces = names[i:j]
                joined = next(
                    (sep.join(pieces) for sep in (", ", ",") if sep.join(pieces) in columns), None
                )
                if joined is not None:
                    out.append(joined)
                    i = j
                    break
        if joined is None:
            out.append(names[i])
            i += 1
    return out


def _columns(text):
    names = _Columns(name.strip() for name in text.split(","))
    if not all(names):
        raise argparse.ArgumentTypeError(f"empty column name in {text!r}")
    names.raw = text
    return names


class _HelpWithCommands(argparse.Action):
    """``tsrnn --help``: the command's help, then each sub-command's (every option, as
    API.md promises of ``tsrnn --help``)."""

    def __init__(self, option_strings, dest, help=None):
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, help=help)

    def __call__(self, parser, namespace, values, option_string=None):
        parts = [parser.format_help()]
        for action in parser._subparsers._group_actions:
            parts += [sub.format_help() for sub in dict.fromkeys(action.choices.values())]
        print("\n".join(parts), end="")
        parser.exit()


def build_parser():
    """Build the argument parser of the ``tsrnn`` command.

    Returns
    -------
    argparse.ArgumentParser
        The top-level parser; its ``forecast`` sub-parser holds the options.

    Examples
    --------
    >>> from tsrnn.cli import build_parser
    >>> args = build_parser().parse_args(["forecast", "--dataset", "air_passengers", "-H", "24"])
    >>> args.command, args.dataset, args.horizon
    ('forecast', 'air_passengers', 24)
    """
    from tsrnn import __version__

    parser = argparse.ArgumentParser(
        prog="tsrnn",
        description="Forecast time series with recurrent networks (tsrnn.RNNForecaster).",
        epilog="The options of the forecast command follow ('tsrnn forecast --help').",
        add_help=False,
    )
    parser.add_argument(
        "-h", "--help", action=_HelpWithCommands, help="show this help message and exit"
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    forecast = commands.add_parser(
        "forecast",
        usage="%(prog)s [options] (CSV | --dataset NAME | --load-model PATH) -H STEPS",
        help="fit an RNNForecaster on a CSV file or a bundled dataset and forecast ahead",
        description=(
            "Fit an RNNForecaster on a series (a CSV file or a bundled dataset) and forecast "
            "the next HORIZON time steps. The forecast is written as CSV (time stamp, one "
            "column per target) to stdout or --output; a one-line summary goes to stderr."
        ),
        epilog=(
            "Estimator options left out take RNNForecaster's defaults, except --random-state, "
            "which defaults to 0 so that the same command gives the same forecast. Examples: "
            "'tsrnn forecast --dataset air_passengers --horizon 24 --plot forecast.png'; "
            "'tsrnn forecast sales.csv --target sales --covariates promo --future promo.csv'. "
            "Exit status: 0 done; 2 bad input or options (nothing fitted or written); 1 a "
            "forecast written with values that are not finite (the training ran off)."
        ),
    )

    data = forecast.add_argument_group("data")
    data.add_argument(
        "csv",
        nargs="?",
        metavar="CSV",
        help="CSV file with a header row and one row per time step; - reads standard input",
    )
    data.add_argument(
        "--dataset",
        metavar="NAME",
        help="use a bundled dataset instead of a CSV (tsrnn.datasets.load_NAME); "
        "see --list-datasets",
    )
    data.add_argument(
        "--list-datasets",
        action="store_true",
        help="list the bundled datasets and exit",
    )
    data.add_argument(
        "--time-col",
        metavar="COLUMN",
        help="column holding the time stamps (dates, or whole numbers counting steps); "
        "default: the first column (with --id-col, the first other column). Midnight may "
        "be a bare date (2021-01-01, 2021-01-01 01:00, ...), as Excel and R write it",
    )
    data.add_argument(
        "--no-time-col",
        action="store_true",
        help="the CSV has no time column: rows are numbered 0, 1, 2, ...",
    )
    data.add_argument(
        "--id-col",
        metavar="COLUMN",
        help="column naming the series of a panel in long layout (one row per series and "
        "time step: id, time, values), as tsrnn writes a panel's forecast; one model is "
        "fitted on all the series and each is forecast",
    )
    data.add_argument(
        "--date-order",
        choices=("dmy", "mdy"),
        help="order of day and month in numeric dates such as 03/04/2021: dmy (day first) or "
        "mdy (month first); needed only where the file cannot tell (no day above 12)",
    )
    data.add_argument(
        "--freq",
        metavar="FREQ",
        help="pandas frequency of the time stamps (e.g. D, W-SUN, MS, QS, h); default: "
        "inferred with pandas. Stamps must follow it without gaps. Not with --load-model "
        "alone: a loaded model keeps its frequency",
    )
    data.add_argument(
        "--target",
        type=_columns,
        action=_ExtendColumns,
        metavar="COLUMNS",
        help="comma-separated column(s) to forecast, modelled jointly (repeatable); "
        "default: every numeric column that is not a covariate (True/False columns "
        "excepted); a note on stderr names the columns left out",
    )
    data.add_argument(
        "--covariates",
        type=_columns,
        action=_ExtendColumns,
        metavar="COLUMNS",
        help="comma-separated column(s) known in advance (calendar, promotions, ...; numbers "
        "or True/False) fed to the model as inputs; their values over the horizon must be "
        "given with --future",
    )
    data.add_argument(
        "--future",
        metavar="CSV",
        help="CSV with the covariates' values for the forecast steps (same time column; one "
        "row per step, so its length is the horizon); - reads standard input",
    )

    out = forecast.add_argument_group("forecast and output")
    out.add_argument(
        "-H",
        "--horizon",
        type=_positive_int,
        metavar="STEPS",
        help="number of time steps to forecast (required unless --future gives them)",
    )
    out.add_argument(
        "-o",
        "--output",
        metavar="PATH",
        help="write the forecast CSV to PATH instead of stdout (- is stdout)",
    )
    out.add_argument(
        "--plot",
        metavar="PNG",
        help="draw the history and the forecast to a PNG file (needs matplotlib)",
    )
    out.add_argument(
        "--save-model",
        metavar="PATH",
        help="save the fitted model with joblib, to forecast later with --load-model",
    )
    out.add_argument(
        "--load-model",
        metavar="PATH",
        help="forecast with a model saved by --save-model, without fitting; the forecast "
        "continues the data that model was fitted on (CSV/--dataset, if given, is only drawn "
        "as history in --plot); of the model options only --n-threads applies to it. The "
        "file is a pickle, and loading it runs code from it: load only files you trust",
    )
    out.add_argument(
        "-q",
        "--quiet",
        action="store_true",
        help="do not print the summary line to stderr (notes about the data still are)",
    )

    group = forecast.add_argument_group("model (RNNForecaster parameters; see its documentation)")
    # Options left out are absent from the namespace, so RNNForecaster's own defaults apply
    # and an explicit 'none' still reaches it as None.
    add_model_option = functools.partial(group.add_argument, default=argparse.SUPPRESS)
    add_model_option("--cell", choices=["rnn", "gru", "lstm"], help="recurrent cell")
    add_model_option("--nonlinearity", choices=["tanh", "relu"], help="activation of cell 'rnn'")
    add_model_option("--hidden-size", type=_positive_int, metavar="N", help="hidden units")
    add_model_option("--num-layers", type=_positive_int, metavar="N", help="stacked layers")
    add_model_option("--dropout", type=float, metavar="P", help="dropout between layers")
    add_model_option(
        "--window",
        type=_window,
        metavar="N|auto",
        help="length of the training subsequences, or 'auto'",
    )
    add_model_option(
        "--model-horizon",
        type=_positive_int,
        metavar="N",
        help="steps the network emits at once (RNNForecaster's 'horizon'; with "
        "--strategy direct); not the forecast length, which is --horizon",
    )
    add_model_option(
        "--strategy",
        choices=["recursive", "direct"],
        help="multi-step forecasting: feed predictions back, or emit several steps at once",
    )
    add_model_option(
        "--bptt",
        type=_optional_int,
        metavar="N|none",
        help="truncated backpropagation through time: at most N steps",
    )
    add_model_option(
        "--clip-norm",
        type=_optional_float,
        metavar="X|none",
        help="clip gradients to this global norm",
    )
    add_model_option(
        "--clip-value",
        type=_optional_float,
        metavar="X|none",
        help="clip each gradient entry to [-X, X]",
    )
    add_model_option(
        "--init",
        choices=["uniform", "orthogonal", "xavier"],
        help="initialisation of the recurrent weights",
    )
    add_model_option(
        "--optimizer", metavar="NAME", help="training optimizer: adam, adamw, sgd or rmsprop"
    )
    add_model_option("--learning-rate", type=float, metavar="LR", help="learning rate")
    add_model_option("--weight-decay", type=float, metavar="X", help="L2 weight decay")
    add_model_option("--batch-size", type=_positive_int, metavar="N", help="windows per batch")
    add_model_option(
        "--max-epochs", type=_positive_int, metavar="N", help="maximum training epochs"
    )
    add_model_option(
        "--early-stopping",
        action=argparse.BooleanOptionalAction,
        help="stop when the loss on the most recent part of the series stops improving",
    )
    add_model_option(
        "--validation-fraction",
        type=float,
        metavar="F",
        help="most recent fraction of the series held out for early stopping",
    )
    add_model_option(
        "--patience", type=_positive_int, metavar="N", help="epochs without improvement"
    )
    add_model_option(
        "--scaler",
        type=_scaler,
        metavar="{standard,robust,minmax,none}",
        help="per-series target scaling inside the model",
    )
    add_model_option(
        "--dtype", choices=["float32", "float64"], help="precision of the network"
    )
    add_model_option(
        "--backend",
        choices=["auto", "numba", "triton", "torch"],
        help="recurrent kernel backend",
    )
    add_model_option("--device", metavar="DEVICE", help="torch device: auto, cpu, cuda or cuda:N")
    add_model_option("--n-threads", type=_positive_int, metavar="N", help="CPU threads")
    add_model_option(
        "--random-state",
        type=_optional_int,
        metavar="SEED|none",
        help="seed; same seed, data and machine give the same forecast (default: 0; 'none' "
        "for a fresh random start each run)",
    )
    add_model_option(
        "-v",
        "--verbose",
        action="count",
        default=0,
        help="show a progress bar while fitting",
    )
    forecast.set_defaults(handler=_forecast, subparser=forecast)
    return parser


def main(argv=None):
    """Run the ``tsrnn`` command.

    Parameters
    ----------
    argv : list of str, optional
        Arguments without the program name; default: ``sys.argv[1:]``.

    Returns
    -------
    int
        0 on success; 1 where the forecast written holds values that are not finite.
        Bad input raises ``SystemExit(2)`` after printing a message to stderr.
    """
    from tsrnn._data import CHOSEN_PANEL

    parser = build_parser()
    args = parser.parse_args(argv)
    # --id-col names the series' column itself: (year, day) is then the panel asked for
    chosen = CHOSEN_PANEL.set(getattr(args, "id_col", None) is not None)
    try:
        return args.handler(args)
    except _InputError as exc:
        args.subparser.error(str(exc))
    finally:
        CHOSEN_PANEL.reset(chosen)


# --------------------------------------------------------------------------------------------
# tsrnn forecast
# --------------------------------------------------------------------------------------------


def _forecast(args):
    if args.list_datasets:
        _print_datasets()
        return 0
    _check_option_combinations(args)

    history = None
    if args.csv is not None or args.dataset is not None:
        frame, source = _read_input(args)
        history = frame
    else:
        source = os.path.basename(args.load_model)

    if args.load_model is not None:
        model = _load_model(args.load_model)
        if "n_threads" in args:
            model.set_params(n_threads=args.n_threads)
        names = getattr(model, "feature_names_in_", None)
        covariates = [] if names is None else [str(name) for name in names]
        if history is not None and args.no_time_col and model._layout_["axis"].kind not in (
            "range",
            None,
        ):
            raise _InputError(
                f"the model in {args.load_model} was fitted on dated data, and with "
                "--no-time-col the CSV's rows carry no dates to place them before its "
                "forecast: leave the CSV out (the model forecasts from the data it was fitted "
                "on), or give it with its time column"
            )
        if history is not None:
            history = _history_like_model(history, model, args.load_model, source, args)
        if not covariates and args.future is not None:
            raise _InputError(
                f"the model in {args.load_model} was fitted without covariates: it forecasts "
                "from its target alone, so --future has nothing to give it; leave --future "
                "out and say how many steps to forecast with --horizon/-H STEPS"
            )
        future = _read_future(args, history, model)
        if covariates and future is None:
            raise _InputError(
                f"the model in {args.load_model} was fitted with covariates {covariates}; give "
                "their values for the forecast steps with --future FILE"
            )
        if future is not None:
            future = _select_future(future, covariates, args.future)
            _check_future_follows(None, future, args.future, model, args.load_model)
        fit_seconds = None
        y = None
    else:
        args.target = _rejoin(args.target, frame.columns, getattr(args, "target_raw", None))
        args.covariates = _rejoin(
            args.covariates, frame.columns, getattr(args, "covariates_raw", None)
        )
        covariates = args.covariates or []
        targets = _choose_targets(frame, covariates, args)
        y = frame[targets[0]] if len(targets) == 1 else frame[targets]
        X = frame[covariates] if covariates else None
        future = _read_future(args, history, None)
        if future is not None:
            future = _select_future(future, covariates, args.future)
            _check_future_follows(y, future, args.future)
        model = _make_estimator(args)
        fit_seconds = _fit(model, X, y)
        if args.save_model is not None:
            _save_model(model, args.save_model)

    horizon = args.horizon if future is None else len(future)
    forecast = _predict(model, horizon if future is None else future)

    if args.plot is not None:
        plot_history = None
        if history is not None:
            plot_history = _history_for_plot(history, forecast)
        _plot(plot_history, forecast, args.plot, title=_title(source, model, horizon))
    _write_forecast(forecast, args.output)
    if history is not None and args.load_model is not None:
        _warn_if_data_runs_past(history, forecast)
    if not args.quiet:
        print(_summary(model, source, y, forecast, fit_seconds, args), file=sys.stderr)
    return _forecast_status(forecast)


def _forecast_status(forecast):
    """1 where the forecast written holds values that are not finite (a network whose
    training ran off: the estimator warned, and a script reading the exit status alone would
    take the file for a forecast), after saying so on stderr; else 0."""
    import numpy as np

    values = np.asarray(forecast, dtype=float)
    if np.isfinite(values).all():
        return 0
    print(
        f"tsrnn: error: {int(values.size - np.isfinite(values).sum())} of the {values.size} "
        "forecast values written are not finite (NaN or infinite): see the warnings above; "
        "refit with a lower --learning-rate, gradient clipping (--clip-norm) or the default "
        "scaler",
        file=sys.stderr,
    )
    return 1


def _time_layout(index):
    """(panel, kind, time zone) of a time index: kind 'datetime', 'period' or 'range'."""
    import pandas as pd

    panel = isinstance(index, pd.MultiIndex)
    time = index.get_level_values(-1) if panel else index
    if isinstance(time, pd.DatetimeIndex):
        return panel, "datetime", time.tz
    if isinstance(time, pd.PeriodIndex):
        return panel, "period", None
    return panel, "range", None


def _layout_words(panel, kind, tz, id_name=None):
    time = {
        "datetime": "dates" + (f" in time zone {tz}" if tz is not None else " without time zone"),
        "period": "dates (periods)",
        "range": "whole numbers counting steps",
    }.get(kind, "rows without time stamps")
    if panel:
        ids = f", one per {str(id_name)!r}" if id_name is not None else ""
        return f"a panel of series{ids}, stamped with {time}"
    return f"one series stamped with {time}"


def _history_like_model(history, model, path, source, args):
    """The data given beside --load-model (drawn as history, compared with the forecast's
    start), refused unless its time axis is like the model's: one series or a panel, steps
    or dates, zone-aware or not. Dates in another zone are the same instants in the model's."""
    axis = model._layout_["axis"]
    panel = model._layout_["ids"] is not None
    tz = model._time_zone()
    own_panel, own_kind, own_tz = _time_layout(history.index)
    dated = ("datetime", "period")
    like = (
        own_panel == panel
        and (own_kind == axis.kind or (own_kind in dated and axis.kind in dated))
        and (own_tz is None) == (tz is None)
    )
    if not like:
        what = f"dataset {source!r}" if args.dataset is not None else f"{source!r}"
        raise _InputError(
            f"the model in {path} was fitted on "
            f"{_layout_words(panel, axis.kind, tz, model._layout_['id_name'])}; {what} holds "
            f"{_layout_words(own_panel, own_kind, own_tz, history.index.names[0])}: leave the "
            "data out (the model forecasts from the data it was fitted on) or give data like "
            "what it was fitted on"
        )
    ratio = None if panel else _step_ratio(history.index, model._ends_[0], axis)
    if ratio is not None and not 1 / 1.5 <= ratio <= 1.5:
        # drawn beside the forecast, it was a history of another step than the model's
        what = f"dataset {source!r}" if args.dataset is not None else f"{source!r}"
        raise _InputError(
            f"the model in {path} forecasts steps of frequency {axis.freq!r}; the time "
            f"stamps of {what} are about {ratio:.2g} times as far apart as its steps: leave "
            "the data out (the model forecasts from the data it was fitted on) or give data "
            "like what it was fitted on"
        )
    if own_tz is not None and not own_panel and str(own_tz) != str(tz):
        history = history.tz_convert(tz)
    return history


def _step_ratio(index, last, axis):
    """The median spacing of a dated history's stamps over the mean length of the model's
    next 12 steps after ``last``, or None where it cannot be told (fewer than 2 stamps,
    stamps without a frequency). Frequencies are compared by their steps' lengths, not by
    name: pandas infers 'D' for three weekdays of a 'B' series, and 'M' periods, 'MS' stamps
    or '24h' and 'D' are the same steps."""
    import pandas as pd

    from tsrnn._data import mean_step

    dated = ("datetime", "period")
    if axis.kind not in dated or axis.freq is None or len(index) < 2:
        return None
    try:
        stamps = index.to_timestamp() if isinstance(index, pd.PeriodIndex) else index
        if not isinstance(stamps, pd.DatetimeIndex):
            return None
        spacing = (stamps[1:] - stamps[:-1]).median()
        return float(spacing / mean_step(last, axis))
    except (TypeError, ValueError, OverflowError):
        return None


def _same_file(a, b) -> bool:
    """Two paths naming one file (the same path, or links to one existing file)."""
    if os.path.realpath(a) == os.path.realpath(b):
        return True
    try:
        return os.path.samefile(a, b)
    except OSError:  # one of them does not exist yet
        return False


def _check_distinct_files(args):
    """No file written twice, and no input overwritten: each output its own file. A forecast
    written over the saved model (or the data) would leave nothing but the forecast."""
    outputs = [("--output", args.output), ("--plot", args.plot), ("--save-model", args.save_model)]
    inputs = [("the data file", args.csv), ("--future", args.future),
              ("--load-model", args.load_model)]
    outputs = [(o, str(p)) for o, p in outputs if p is not None]
    inputs = [(o, str(p)) for o, p in inputs if p is not None and str(p) != "-"]
    for i, (option, path) in enumerate(outputs):
        for other, other_path in outputs[i + 1 :] + inputs:
            if _same_file(path, other_path):
                lost = "overwrite the input" if (other, other_path) in inputs else "keep only one"
                raise _InputError(
                    f"{option} and {other} name the same file {path!r}: writing it would "
                    f"{lost}. Give {option} another file name"
                )


def _check_option_combinations(args):
    if args.csv is not None and args.dataset is not None:
        raise _InputError("give either a CSV file or --dataset, not both")
    if args.csv == "-" and args.future == "-":
        raise _InputError(
            "the data and --future cannot both be read from standard input (-): give one of "
            "them as a file"
        )
    if args.output == "-":
        args.output = None  # '-' is standard output, as in most command-line tools
    if args.save_model == "-":
        raise _InputError("--save-model writes a file: give its path (- is not a file here)")
    if args.csv is None and args.dataset is None and args.load_model is None:
        raise _InputError(
            "no data: give a CSV file, --dataset NAME (see --list-datasets) or --load-model PATH"
        )
    if args.plot is not None and os.path.splitext(str(args.plot))[1].lower() != ".png":
        # checked before any work: a fit should not be lost to a plot that cannot be written
        raise _InputError(f"--plot draws a PNG file: give a path ending in .png, not {args.plot!r}")
    # checked before any work too: a fit should not be lost to a folder that is not there
    for option, path in (("--output", args.output), ("--plot", args.plot),
                         ("--save-model", args.save_model)):
        if path is not None and str(path).endswith(tuple(filter(None, (os.sep, os.altsep)))):
            # abspath would drop the separator, and the folder then be taken for the file's
            raise _InputError(
                f"{option} {str(path)!r} names a folder: give a file name (e.g. "
                f"{path}{'forecast.csv' if option == '--output' else 'model.joblib'})"
            )
        folder = os.path.dirname(os.path.abspath(str(path))) if path is not None else None
        if path is not None and os.path.isdir(str(path)):
            raise _InputError(f"{option} {str(path)!r} is a folder: give a file name in it")
        if folder is not None and not os.path.isdir(folder):
            raise _InputError(f"{option} {str(path)!r}: there is no folder {folder!r}")
        if folder is not None and not os.access(folder, os.W_OK):
            raise _InputError(f"{option} {str(path)!r}: the folder {folder!r} is not writable")
    if args.load_model is not None and args.save_model is not None:
        raise _InputError("--load-model forecasts without fitting, so there is nothing to save")
    _check_distinct_files(args)
    fit_only = [
        "--" + dest.replace("_", "-")
        for dest, _ in _ESTIMATOR_OPTIONS
        if dest in args and dest != "n_threads"
    ]
    if args.load_model is not None and fit_only:
        verb, them = ("applies", "it") if len(fit_only) == 1 else ("apply", "them")
        raise _InputError(
            f"--load-model forecasts with the saved model as it was fitted: {', '.join(fit_only)} "
            f"only {verb} when fitting (only --n-threads applies to a loaded model); leave "
            f"{them} out, or fit a new model from the data"
        )
    no_data = args.csv is None and args.dataset is None
    if args.load_model is not None and args.freq is not None and no_data:
        # with data, --freq still reads its stamps; without, the model's frequency rules
        raise _InputError(
            "--freq describes the time stamps of a CSV file or --dataset; a loaded model "
            "forecasts at the frequency it was fitted with (and reads --future with it): "
            "leave --freq out"
        )
    for option, names in (("--target", args.target), ("--covariates", args.covariates)):
        repeated = sorted({name for name in names or () if names.count(name) > 1})
        if repeated:
            raise _InputError(
                f"{option} names the column(s) {repeated} more than once: give each column once"
            )
    if args.load_model is not None and args.target:
        raise _InputError(
            "--target chooses columns for fitting; a loaded model forecasts the columns it "
            "was fitted on: leave --target out, or fit a new model"
        )
    if args.load_model is not None and args.covariates:
        raise _InputError(
            "--covariates chooses columns for fitting; a loaded model already knows its "
            "covariates: give their future values with --future"
        )
    if args.future is not None and not args.covariates and args.load_model is None:
        raise _InputError(
            "--future gives the covariates' values for the forecast steps: name the covariate "
            "columns with --covariates"
        )
    if args.covariates and args.future is None:
        raise _InputError(
            f"covariates {args.covariates} must be known for the forecast steps too: give "
            "their future values with --future FILE (a CSV with the time column and those "
            "columns, one row per forecast step)"
        )
    if args.future is None and args.horizon is None:
        raise _InputError("say how many steps to forecast with --horizon/-H STEPS")
    if args.no_time_col and args.time_col is not None:
        raise _InputError("--time-col and --no-time-col contradict each other")
    if args.dataset is not None and (args.time_col is not None or args.no_time_col):
        raise _InputError("--time-col/--no-time-col apply to CSV files; datasets have their time")
    if args.id_col is not None:
        _check_id_col_combinations(args)


def _check_id_col_combinations(args):
    if args.csv is None:
        raise _InputError(
            "--id-col names a column of the CSV file: give the file (datasets and saved "
            "models have their series already)"
        )
    if args.no_time_col:
        raise _InputError(
            "--id-col needs a time column: the series of a panel are matched by their time "
            "stamps; leave --no-time-col out (name the time column with --time-col)"
        )
    if args.time_col is not None and args.id_col == args.time_col:
        raise _InputError(
            f"--id-col and --time-col both name {args.id_col!r}: the series ids and the time "
            "stamps are two columns"
        )
    if args.covariates:
        raise _InputError(
            "--id-col with --covariates: the command line reads --future for one series "
            "only; fit a panel with covariates in Python (predict(X) with X indexed by "
            "(series id, time)), or forecast each series on its own"
        )


# --------------------------------------------------------------------------------------------
# data
# --------------------------------------------------------------------------------------------


def _dataset_loaders():
    datasets = importlib.import_module("tsrnn.datasets")
    return {
        name[len("load_") :]: getattr(datasets, name)
        for name in sorted(dir(datasets))
        if name.startswith("load_") and callable(getattr(datasets, name))
    }


def _print_datasets():
    for name, loader in _dataset_loaders().items():
        doc = (loader.__doc__ or "").strip().splitlines()
        print(f"{name:<22} {doc[0] if doc else ''}".rstrip())


def _read_input(args):
    import pandas as pd

    if args.dataset is not None:
        loaders = _dataset_loaders()
        name = args.dataset.removeprefix("load_")
        if name not in loaders:
            raise _InputError(
                f"unknown dataset {args.dataset!r}; bundled datasets: "
                f"{', '.join(loaders) or '(none found)'}"
            )
        data = loaders[name]()
        if isinstance(data, pd.Series):
            data = data.to_frame(name=data.name if data.name is not None else name)
        if not isinstance(data, pd.DataFrame):
            raise _InputError(
                f"dataset {name!r} is a {type(data).__name__}, not a pandas Series or "
                "DataFrame; load it in Python instead"
            )
        if args.freq is not None:
            data.index = _apply_freq(data.index, args.freq, f"dataset {name!r}")
        if args.load_model is None:  # a loaded model forecasts what it was fitted on
            _dataset_target(loaders[name], name, args)
        return data, name
    frame = _read_csv(args.csv, args)
    if args.csv == "-":
        return frame, _STDIN
    # a pipe (<(...) is /dev/fd/63) by its whole path, a file by its name
    return frame, os.path.basename(args.csv) if os.path.isfile(args.csv) else args.csv


_STDIN = "<stdin>"  # how messages name the data read from '-'


def _read_text(path):
    """The text of ``path``, or of standard input for ``'-'``, read once: a pipe
    (``<(...)``, ``/dev/stdin``) can be read only once, and the header is checked on the same
    text that pandas parses. Files to forecast from are small next to the memory it takes.
    The text is UTF-8 (with or without a byte-order mark), or UTF-16 or UTF-32 with its
    byte-order mark."""
    import codecs
    import lzma
    import tarfile
    import zipfile

    if path == "-":
        data = sys.stdin.buffer.read()
    else:
        if os.path.isdir(path):
            raise _InputError(f"{path!r} is a folder, not a CSV file")
        if not os.path.exists(path):
            raise _InputError(f"no such file: {path!r}")
        try:
            with _open_maybe_compressed(path) as f:
                data = f.read()
        except _InputError:
            raise
        except (OSError, EOFError, ValueError, zipfile.BadZipFile, lzma.LZMAError,
                tarfile.TarError) as exc:
            raise _InputError(f"cannot read {path!r}: {exc}") from None  # a corrupt archive
    name = _name(path)
    if data.startswith(b"PK\x03\x04") and not _is_workbook(data):
        raise _InputError(
            f"{name!r} is a zip archive, read as one by its name only: name it .zip (an "
            "archive of one CSV file), or unzip it"
        )
    if data.startswith((b"PK\x03\x04", b"\xd0\xcf\x11\xe0")):  # a zip (.xlsx) or OLE (.xls)
        raise _InputError(
            f"{name!r} is not a CSV file but a binary one (an Excel workbook?); save it as CSV "
            "(in Excel: Save As, 'CSV UTF-8'), or convert it, e.g. "
            "pandas.read_excel(path).to_csv(new_path, index=False)"
        )
    if data.startswith((codecs.BOM_UTF32_LE, codecs.BOM_UTF32_BE)):  # before UTF-16's
        return data.decode("utf-32")
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        # UTF-16 with its byte-order mark (Excel's "Unicode text", PowerShell's default):
        # the mark says the encoding, so it is read as that
        return data.decode("utf-16")
    if b"\x00" in data[:4096]:
        # no text file holds NUL bytes: UTF-16 or UTF-32 without a byte-order mark (each
        # ASCII character then beside a zero byte), or not text at all; read as UTF-8 it
        # gave time stamps such as '\x00d\x00a\x00t\x00e'
        raise _InputError(
            f"{name!r} holds NUL bytes, which no CSV text does: it may be UTF-16 or UTF-32 "
            "without a byte-order mark, or not a text file; save it as UTF-8 (e.g. "
            "pandas.read_csv(path, encoding='utf-16-le').to_csv(new_path, index=False), with "
            "the file's own encoding)"
        )
    return data.decode("utf-8-sig")  # a UnicodeDecodeError is reported by the caller


def _is_workbook(data) -> bool:
    """Whether zip ``data`` is an office document (an Excel workbook's ``xl/`` parts, or any
    Open XML or OpenDocument package), not an archive of a CSV file."""
    import io
    import zipfile

    try:
        names = zipfile.ZipFile(io.BytesIO(data)).namelist()
    except (zipfile.BadZipFile, OSError, ValueError):
        return True  # not readable as an archive either: named as a binary file
    return any(n.startswith("xl/") or n in ("[Content_Types].xml", "mimetype") for n in names)


def _open_maybe_compressed(path):
    """``path`` opened for reading bytes, decompressed as its name says (``.gz``, ``.bz2``,
    ``.xz``, ``.zip`` holding one file, ``.zst``), as pandas' ``read_csv`` infers it."""
    import bz2
    import gzip
    import lzma
    import zipfile

    name = str(path).lower()
    if name.endswith((".tar", ".tar.gz", ".tgz", ".tar.bz2", ".tbz2", ".tar.xz", ".txz")):
        import tarfile

        archive = tarfile.open(path, "r:*")
        members = [m for m in archive.getmembers() if m.isfile()]
        if len(members) != 1:
            archive.close()
            raise _InputError(
                f"{path!r} holds {len(members)} files; give an archive of one CSV file, or "
                "unpack it"
            )
        return archive.extractfile(members[0])
    if name.endswith(".gz"):
        return gzip.open(path, "rb")
    if name.endswith(".bz2"):
        return bz2.open(path, "rb")
    if name.endswith(".xz"):
        return lzma.open(path, "rb")
    if name.endswith(".zip"):
        archive = zipfile.ZipFile(path)
        members = [m for m in archive.namelist() if not m.endswith("/")]
        if len(members) != 1:
            archive.close()
            raise _InputError(
                f"{path!r} holds {len(members)} files; give a zip of one CSV file, or unzip it"
            )
        return archive.open(members[0])
    if name.endswith(".zst"):
        try:
            import zstandard
        except ImportError:
            raise _InputError(
                f"{path!r} is zstd-compressed, which needs the zstandard package: "
                "pip install zstandard, or decompress it first"
            ) from None
        return zstandard.open(path, "rb")
    return open(path, "rb")


def _dataset_target(loader, name, args):
    """A dataset that names its target (``return_X_y``: the rest are covariates) forecasts
    that target by default, not every numeric column: its covariates' future values are
    known only with --future."""
    import inspect

    if args.target or "return_X_y" not in inspect.signature(loader).parameters:
        return
    X, y = loader(return_X_y=True)
    targets = [y.name] if getattr(y, "ndim", 1) == 1 else list(y.columns)
    args.target = [str(t) for t in targets]
    left = [str(c) for c in getattr(X, "columns", []) if str(c) not in (args.covariates or [])]
    if left:
        print(
            f"tsrnn: dataset {name!r}: forecasting its target {args.target}; its covariate(s) "
            f"{left} are left out (to use them, name them with --covariates and give their "
            "future values with --future, or name the columns to forecast with --target)",
            file=sys.stderr,
        )


def _read_csv(path, args):
    import io

    import numpy as np
    import pandas as pd

    try:
        text = _read_text(path)
        # spaces after the commas ("date, sales", as files written by hand have them) are
        # not part of the names or values
        frame = pd.read_csv(io.StringIO(text), skipinitialspace=True)
    except UnicodeDecodeError as exc:
        raise _InputError(
            f"could not read {_name(path)!r} as CSV: it is not UTF-8 text ({exc}); save it as "
            "UTF-8 (e.g. pandas.read_csv(path, encoding='latin-1').to_csv(new_path, "
            "index=False), with the file's own encoding)"
        ) from None
    except (pd.errors.ParserError, pd.errors.EmptyDataError) as exc:
        raise _InputError(f"could not read {_name(path)!r} as CSV: {str(exc).strip()}") from None
    path = _name(path)
    frame = _header_as_wide_as_rows(frame, text, path)
    # rows of separators alone at the end (',,' as spreadsheets export their unused rows) hold
    # nothing: left out, with a note (an empty row between data rows is still refused)
    filled = np.flatnonzero(frame.notna().any(axis=1).to_numpy())
    tail = len(frame) - (int(filled[-1]) + 1 if len(filled) else 0)
    if tail and len(filled):
        print(f"tsrnn: ignoring {tail} empty row(s) at the end of {path!r}", file=sys.stderr)
        frame = frame.iloc[: len(frame) - tail]
    if frame.shape[1] == 0 or len(frame) == 0:
        raise _InputError(f"{path!r} has no data rows")
    _check_header(path, frame, text)
    frame = _row_numbers_column(frame, path, args)
    if args.no_time_col:
        frame.index = pd.RangeIndex(len(frame), name="step")  # the output CSV's first header
        return frame
    id_col = getattr(args, "id_col", None)
    if args.time_col is not None:
        time_col = args.time_col
    else:  # the first column, or with --id-col the first other one (id, time, values)
        time_col = next((c for c in frame.columns if c != id_col), frame.columns[0])
    if time_col not in frame.columns:
        raise _InputError(
            f"{path!r} has no column {time_col!r} (--time-col); its columns are "
            f"{list(frame.columns)}"
        )
    future_file = getattr(args, "future_file", False)
    if frame.shape[1] == 1 and not future_file:
        taken = "was taken as the time column" if args.time_col is None else "is --time-col"
        raise _InputError(
            f"the only column of {path!r}, {str(time_col)!r}, {taken}, which leaves nothing to "
            "forecast; if it is the series itself, use --no-time-col (rows numbered 0, 1, "
            "2, ...)"
        )
    if id_col is not None and id_col not in frame.columns:
        raise _InputError(
            f"{path!r} has no column {id_col!r} (--id-col); its columns are "
            f"{list(frame.columns)}"
        )
    # numeric dates' day/month order, from --date-order or the data; kept in args, so that it
    # holds for the --future file too, whose few rows may not show it
    where = f"time column {time_col!r} of {path!r}"
    given = args.date_order
    args.date_order = _date_order(
        frame[time_col], where, given, getattr(args, "date_order_from", None)
    )
    if given is None and args.date_order is not None:
        args.date_order_from = where  # shown by the data, not --date-order
    if id_col is not None:
        frame = _ids_as_written(frame, text, id_col)
        return _panel_frame(frame, time_col, id_col, path, args)
    try:
        index = _time_index(
            frame[time_col],
            path,
            args.freq,
            args.date_order,
            getattr(args, "freq_label", None),
            steps_from=getattr(args, "steps_from", None),
        )
    except _InputError:
        # a panel in long layout (as tsrnn writes one) fails as duplicated stamps or as a
        # time column of ids: say so, not "aggregate the duplicates"
        hint = None if future_file else _panel_hint(frame, time_col, path, args.time_col)
        if hint is None:
            raise
        raise _InputError(hint) from None
    if args.time_col is None and _header(text)[:1] == [""]:
        # an empty header (pandas names it 'Unnamed: 0'): the forecast's time column keeps it
        index = index.rename(None)
    return frame.drop(columns=time_col).set_axis(index, axis=0)


def _header_as_wide_as_rows(frame, text, path):
    """``frame`` as read, where its header names as many columns as its rows hold values.

    Where the rows hold more, pandas takes the first values of each row for its index and
    names the rest by the header, each column then holding its neighbour's values: a title
    or comment line above the header, or a header missing a name, were read shifted, without
    a word. Rows that end in empty fields (a comma after each row's last value, as some
    exports write) are read without them, with a note; anything else is refused."""
    import io

    import pandas as pd

    if isinstance(frame.index, pd.RangeIndex):
        return frame
    extra = frame.index.nlevels
    if frame.shape[1] >= extra and frame.iloc[:, -extra:].isna().all(axis=None):
        print(
            f"tsrnn: ignoring the empty field(s) at the end of every row of {path!r} (a comma "
            "after each row's last value)",
            file=sys.stderr,
        )
        return pd.read_csv(io.StringIO(text), skipinitialspace=True, index_col=False)
    header = _header(text)
    error = _separator_error(path, header, text)
    if error is not None:
        # ';' between fields and ',' as the decimal mark: a row splits at its decimal commas
        raise error
    lines = (line for line in text.splitlines()[1:] if line.strip())
    first = next(lines, "")
    fix = (
        "if the first line is a title or a comment, delete it: the first line must be the "
        "header naming each column"
        if len(header) == 1
        else "name every column in the header (a column without a name takes an empty "
        "field: date,,sales)"
    )
    raise _InputError(
        f"the header of {path!r} names {len(header)} column(s), {header}, but its rows hold "
        f"{len(header) + extra} values (first row: {first!r}); {fix}"
    )


def _ids_as_written(frame, text, id_col):
    """``frame`` with its series ids as the file writes them where reading them as numbers
    changed any: ``01`` and ``1`` were read as one series (1), ``007`` named 7 in the
    forecast. Ids that read back as written (1, 2, 3) stay numbers."""
    import io

    import pandas as pd

    ids = frame[id_col]
    if ids.dtype == object or isinstance(ids.dtype, pd.StringDtype):
        return frame
    written = pd.read_csv(
        io.StringIO(text), skipinitialspace=True, dtype={id_col: str}, index_col=False
    )[id_col].iloc[: len(frame)]
    read = ids.astype(str).where(ids.notna())
    if len(written) != len(frame) or written.fillna("").eq(read.fillna("")).all():
        return frame
    frame = frame.copy()
    frame[id_col] = written.to_numpy()
    return frame


def _panel_frame(frame, time_col, id_col, path, args):
    """The long layout (id, time, values) as a frame indexed by (id, time): each series' time
    stamps read and checked on their own (series may differ in length and start)."""
    import numpy as np
    import pandas as pd

    ids = frame[id_col]
    if ids.isna().any():
        row = int(np.flatnonzero(ids.isna().to_numpy())[0])
        raise _InputError(
            f"the id column {id_col!r} of {path!r} is empty in row {row + 1}; every row needs "
            "the id of its series"
        )
    column = frame[time_col]
    if _all_months(column) and any(_yyyymm(column[(ids == k).to_numpy()]) for k in pd.unique(ids)):
        # one reading for every series: YYYYMM where any series shows it (a series within
        # one year alone would stay step numbers, and the panel's time level mix kinds)
        frame = frame.assign(**{time_col: pd.to_datetime(column.astype(str), format="%Y%m")})
    parts, keys = [], []
    for key in pd.unique(ids):
        rows = frame[(ids == key).to_numpy()]
        index = _time_index(
            rows[time_col].reset_index(drop=True),
            path,
            args.freq,
            args.date_order,
            series=key,
        )
        parts.append(rows.drop(columns=[time_col, id_col]).set_axis(index, axis=0))
        keys.append(key)
    zone = _one_zone([part.index for part in parts], keys, f"time column {time_col!r} of {path!r}")
    if zone is not None:
        parts = [part.set_axis(part.index.tz_convert(zone), axis=0) for part in parts]
    return pd.concat(parts, keys=keys, names=[id_col, parts[0].index.name])


def _one_zone(indexes, keys, where):
    """The one time zone for a panel's series whose stamps were read in different ones, or
    None where they share one. A series whose UTC offsets change is read in a zone that has
    those changes (Europe/Berlin), one whose offsets do not in a fixed offset (UTC+01:00):
    stamps of both kinds made the panel's time level hold plain objects, and the fit refused
    it. The zone taken writes every series' offsets as the file does (the local times stay
    as written); where none does, or some stamps have offsets and others not, refused."""
    import numpy as np
    import pandas as pd

    if not all(isinstance(index, pd.DatetimeIndex) for index in indexes):
        return None
    if len({str(index.tz) for index in indexes}) < 2:
        return None
    aware = [index.tz is not None for index in indexes]
    if not all(aware):
        naive, offset = keys[aware.index(False)], keys[aware.index(True)]
        raise _InputError(
            f"{where} has stamps without UTC offsets (series {str(naive)!r}) and with them "
            f"(series {str(offset)!r}): write every series' stamps alike, all in UTC or all "
            "as local times without offsets"
        )

    def offsets(index):
        utc = index.tz_convert("UTC").tz_localize(None)
        return (index.tz_localize(None) - utc).total_seconds().to_numpy()

    # the series of one zone as one index (their stamps' union): a zone is tried on a few
    # groups, not on each of thousands of series
    zone_of = {key: str(index.tz) for key, index in zip(keys, indexes, strict=True)}
    groups = {}
    for index in indexes:
        groups.setdefault(str(index.tz), []).append(index)
    unions = {tz: parts[0].append(parts[1:]).unique().sort_values() for tz, parts in groups.items()}
    written = {tz: offsets(index) for tz, index in unions.items()}

    def misfit(zone, rows=None):
        """The first group whose offsets ``zone`` does not write, or None."""
        for tz, index in unions.items():
            seconds = written[tz]
            take = slice(None) if rows is None else rows(seconds)
            if not np.array_equal(offsets(index[take].tz_convert(zone)), seconds[take]):
                return tz
        return None

    def probe(seconds):  # the first and last stamps and those around each change
        changes = np.flatnonzero(np.diff(seconds))
        return np.unique(np.r_[0, changes, changes + 1, len(seconds) - 1])

    named = sorted(tz for tz in unions if not tz.startswith(("UTC", "+", "-")))
    zones = _ranked_zones()  # none without a time zone database: the zones read in
    for zone in [*named, *zones]:
        try:
            if misfit(zone, probe) is None and misfit(zone) is None:
                return zone
        except Exception:  # a zone that pandas cannot use
            continue
    # name a series the first zone read fails on, beside one read in that zone
    base = named[0] if named else zone_of[keys[0]]
    try:
        odd = misfit(base) if named else None
    except Exception:  # a zone that pandas cannot use
        odd = None
    odd = odd or next(tz for tz in unions if tz != base)
    first = next(k for k in keys if zone_of[k] == base)
    other = next(k for k in keys if zone_of[k] == odd)
    raise _InputError(
        f"{where} holds series in different time zones (series {str(first)!r} in "
        f"{base}, series {str(other)!r} in {odd}), and no one zone has all their "
        "UTC offsets: write the stamps in UTC (tz_convert('UTC') before to_csv), or as local "
        "times without offsets"
    )


def _panel_hint(frame, time_col, path, given_time_col=None):
    """The message for a file that looks like a panel in long layout: a text column (the ids)
    within whose values the time stamps do not repeat, though they repeat across them. None
    where none does. The advice names ``--time-col`` where ``--id-col`` alone would not take
    the stamps (with it, the time column is the first other than the ids)."""
    import pandas as pd

    n = len(frame)
    for id_col in frame.columns:
        ids = frame[id_col]
        numeric_ids = pd.api.types.is_integer_dtype(ids)
        if numeric_ids and str(id_col).startswith("Unnamed: "):
            continue  # pandas' index written by to_csv, not ids
        if not numeric_ids and (
            pd.api.types.is_numeric_dtype(ids)
            or pd.api.types.is_bool_dtype(ids)
            or _may_be_stamps(ids)  # text dates are the stamps, not the ids
        ):
            continue
        if not 1 < ids.nunique() <= n // 2:
            continue
        stamps = [time_col] if time_col != id_col else []
        stamps += [c for c in frame.columns if c not in (id_col, time_col)]
        for t in stamps:
            column = frame[t]
            if t != time_col and not _may_be_stamps(column):
                continue
            if _numbers_rows(frame, t, id_col):
                continue  # pandas' index of each series, not their stamps
            if numeric_ids and pd.api.types.is_integer_dtype(column):
                continue  # two columns of whole numbers: which holds the ids cannot be told
            # stamps that repeat once per id; for whole-number ids, many rows: the hour an
            # autumn clock change repeats made an int column of values look like ids (text
            # ids are not values: a new store's few rows beside an old one's are a panel)
            repeated = int(column.duplicated().sum())
            enough = not numeric_ids or repeated * 10 >= n
            if repeated and enough and not frame.duplicated([id_col, t]).any():
                default = next(
                    c for c in frame.columns if c != id_col and not _numbers_rows(frame, c, id_col)
                )
                implied = t == (default if given_time_col is None else given_time_col)
                how = f"--id-col {id_col}" + ("" if implied else f" --time-col {t}")
                return (
                    f"{path!r} looks like a panel in long layout, one series per {id_col!r} "
                    f"(the stamps of {t!r} repeat once per {id_col}): read it as one with "
                    f"{how}, which fits one model on all the series and forecasts each"
                )
    return None


def _may_be_stamps(column) -> bool:
    """Whether a column could be a time column: whole numbers, or text that reads as dates."""
    import pandas as pd

    if pd.api.types.is_integer_dtype(column):
        return True
    if pd.api.types.is_numeric_dtype(column) or pd.api.types.is_bool_dtype(column):
        return False
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        parsed = pd.to_datetime(column, format="mixed", errors="coerce", utc=True)
    return bool(parsed.notna().all())


def _numbers_rows(frame, column, id_col=None) -> bool:
    """Whether ``column`` is an unnamed column of row numbers, 0, 1, 2, ... (pandas' index,
    which ``to_csv`` writes unless ``index=False``), or with ``id_col`` numbered within each
    id (the index of per-series frames concatenated, as a panel is built)."""
    import numpy as np
    import pandas as pd

    values = frame[column]
    if not (str(column).startswith("Unnamed: ") and pd.api.types.is_integer_dtype(values)):
        return False
    if np.array_equal(values.to_numpy(), np.arange(len(frame))):
        return True
    if id_col is None or id_col not in frame.columns or id_col == column:
        return False
    within = frame.groupby(id_col, sort=False, dropna=False).cumcount().to_numpy()
    return np.array_equal(values.to_numpy(), within)


def _row_numbers_column(frame, path, args):
    """A first column without a name that numbers the rows 0, 1, 2, ...: the index that
    pandas' ``to_csv`` writes unless ``index=False`` (with ``--id-col``, also numbered within
    each series). It is no time column (the dates, if any, are in another) and no data:
    refused as the default time column, left out otherwise (with ``--id-col`` the default
    time column is the first column other than the ids and these numbers)."""
    first = frame.columns[0]
    id_col = getattr(args, "id_col", None)
    if frame.shape[1] < 2 or not _numbers_rows(frame, first, id_col):
        return frame
    if args.time_col is None and not args.no_time_col and id_col is None:
        raise _InputError(
            f"the first column of {path!r} has no name and numbers the rows 0, 1, 2, ... (the "
            "index pandas' to_csv writes unless index=False), so it is not the time column: "
            f"name the time column with --time-col (the columns: {list(frame.columns[1:])}), "
            "or use --no-time-col"
        )
    if args.time_col == first:
        return frame
    print(
        f"tsrnn: ignoring the unnamed first column of {path!r} (row numbers 0, 1, 2, ...)",
        file=sys.stderr,
    )
    return frame.drop(columns=first)


def _name(path):
    """``path`` as messages name it: standard input (``'-'``) as ``'<stdin>'``."""
    return _STDIN if path == "-" else path


def _header(text):
    """The CSV's header fields as written (pandas renames empty and repeated ones)."""
    import csv
    import io

    return next(csv.reader(io.StringIO(text, newline=""), skipinitialspace=True), [])


def _check_header(path, frame, text):
    """The header as written: pandas renames a repeated name ('sales' again becomes 'sales.1'),
    and a file of one column whose name holds ';' or a tab was likely written with another
    separator."""
    header = _header(text)
    if _title_line(header, frame):
        # one name and empty fields: a title cell above the table, as a spreadsheet exports
        # it ("Monthly sales,,"); pandas would read it as the header
        raise _InputError(
            f"the first line of {path!r}, {','.join(header)!r}, names one column and leaves "
            f"the other {len(header) - 1} unnamed; if it is a title or a comment, delete it: "
            "the first line must be the header naming each column"
        )
    repeated = sorted({name for name in header if header.count(name) > 1})
    if repeated:
        raise _InputError(
            f"{path!r} names the column(s) {repeated} more than once: give each column its own "
            "name in the header"
        )
    if _values_as_header(header):
        # no header row: pandas took the first data row for the column names, and the fit
        # ran on the rest, one observation short, its output headed by those values
        raise _InputError(
            f"{path!r} seems to have no header row: its first line, {','.join(header)!r}, "
            "holds values, which would be read as column names (and that row lost); add a "
            "header row naming the columns (e.g. date,value)"
        )
    if frame.shape[1] == 1 and (error := _separator_error(path, header, text)):
        raise error


def _separator_error(path, header, text):
    """The error for a file whose one header name holds ';' or a tab: written with another
    separator (a spreadsheet's export in many locales: ';' between fields, ',' as the decimal
    mark), or None. The decimal mark is named only where the values hold commas."""
    if len(header) != 1:
        return None
    for sep, shown in ((";", "';'"), ("\t", "'\\t'")):
        if sep in header[0]:
            rows = text.splitlines()[1:6]
            decimal = ", decimal=','" if sep == ";" and any("," in row for row in rows) else ""
            return _InputError(
                f"{path!r} reads as one column named {header[0]!r}: its fields are separated "
                f"by {shown}, and tsrnn reads comma-separated files; convert it, e.g. "
                f"pandas.read_csv(path, sep={shown}{decimal}).to_csv(new_path, index=False)"
            )
    return None


def _title_line(header, frame) -> bool:
    """Whether the first line is a title above the table: one name and empty fields, as a
    spreadsheet exports a title cell ("Monthly sales,,"). Of two fields ("Monthly sales,"),
    only where the next line holds names, not values: "date," may head an unnamed column."""
    if len(header) < 2 or not header[0].strip() or any(n.strip() for n in header[1:]):
        return False
    if len(header) > 2:
        return True
    first = [str(v).strip() for v in frame.iloc[0]] if len(frame) else []

    def name(value):
        try:
            float(value)
        except ValueError:
            return value != "" and value.lower() != "nan" and not _may_be_date(value)
        return False

    return len(first) == 2 and all(name(v) for v in first)


def _may_be_date(value) -> bool:
    import pandas as pd

    try:
        pd.Timestamp(value)
    except (ValueError, TypeError, OverflowError):
        return False
    return True


def _values_as_header(header) -> bool:
    """Whether a header row reads as a row of data: a date then numbers, or numbers alone
    with a decimal point among them (column names such as 2019 or 2020 can be years)."""
    import pandas as pd

    def number(name):
        try:
            float(name)
        except ValueError:
            return False
        return True

    names = [str(n).strip() for n in header]
    if not names or not all(number(n) for n in names[1:]):
        return False
    if number(names[0]):
        return any("." in n for n in names)
    if not any(sep in names[0] for sep in "-/:"):
        return False
    try:
        pd.Timestamp(names[0])
    except (ValueError, TypeError, OverflowError):
        return False
    return len(names) > 1


def _time_index(
    column, path, freq, date_order=None, freq_label=None, *, series=None, steps_from=None
):
    """The time index read from ``column``. ``series``: the id of a panel's series whose
    stamps these are; ``steps_from``: for a --future file after data that counts steps,
    ``(first, step, whose)``, the step numbers its rows must have."""
    import numpy as np
    import pandas as pd

    name = column.name
    where = f"time column {name!r} of {path!r}"
    if series is not None:
        where += f" (series {str(series)!r})"
    if column.isna().any():
        row = int(np.flatnonzero(column.isna().to_numpy())[0])
        raise _InputError(f"{where} is empty in row {row + 1}; every row needs a time stamp")
    if _yyyymmdd(column):
        column = pd.Series(pd.to_datetime(column.astype(str), format="%Y%m%d"), name=name)
    elif _yyyymm(column, dated=freq is not None and freq_label is not None):
        column = pd.Series(pd.to_datetime(column.astype(str), format="%Y%m"), name=name)
    if pd.api.types.is_numeric_dtype(column) and not pd.api.types.is_bool_dtype(column):
        values = column.to_numpy()
        if not np.all(np.mod(values, 1) == 0):
            first = values[np.flatnonzero(np.mod(values, 1) != 0)[0]].item()
            raise _InputError(
                f"{where} holds numbers that are not whole ({first!r}, ...); use dates or "
                "step numbers, or choose another column with --time-col"
                + ("" if series is not None else ", or use --no-time-col")  # not a panel's
            )
        if freq is not None and freq_label is not None:  # a --future file after dated data
            raise _InputError(
                f"{where} counts steps as numbers, but the history's time stamps are dates: "
                "the --future file needs the history's time column, with dates (first, or "
                "named with --time-col)"
            )
        if freq is not None:
            raise _InputError(f"--freq applies to dates, but {where} counts steps as numbers")
        values = values.astype(np.int64)
        steps = np.diff(values)
        if len(values) > 1 and (steps[0] <= 0 or np.any(steps != steps[0])):
            bad = 0 if steps[0] <= 0 else int(np.flatnonzero(steps != steps[0])[0])
            raise _InputError(
                f"{where} counts steps, but not evenly: {values[bad]} is followed by "
                f"{values[bad + 1]} (the first step is {steps[0]}); the rows must be "
                "consecutive, equally spaced time steps in increasing order (if the time is "
                "in another column, name it with --time-col)"
            )
        step = int(steps[0]) if len(values) > 1 else 1
        return pd.RangeIndex(values[0], values[-1] + step, step, name=name)
    if steps_from is not None:
        first, step, whose = steps_from
        raise _InputError(
            f"{where} holds {column.iloc[0]!r}, ..., but {whose} counts steps as whole "
            f"numbers: give the --future rows the step numbers that follow ({first}, "
            f"{first + step}, ...) in that column"
        )
    index = _parse_dates(column, where, date_order, panel=series is not None)
    _check_years(column, index, where)
    _check_order(index, where)
    if freq is not None:
        try:
            return _apply_freq(index, freq, where, freq_label, panel=series is not None)
        except _InputError as exc:
            raise _InputError(_utc_offsets_message(column, index, where) or str(exc)) from None
    if len(index) < 3:
        raise _InputError(
            f"{where} has {len(index)} stamp(s), too few for pandas to infer a frequency: "
            "pass --freq"
        )
    inferred = pd.DatetimeIndex(index, freq="infer")
    if inferred.freq is None:
        from tsrnn._data import months_on_one_day

        months = months_on_one_day(index)
        if months and series is None:
            # every 15th (of every k-th month): no pandas frequency string, but an offset
            return pd.DatetimeIndex(index, freq=pd.DateOffset(months=months))
        if months:
            raise _InputError(
                f"{where} has stamps {months} month(s) apart on day {index[0].day} of the "
                "month, which no pandas frequency string describes, and the command line "
                "reads a panel's time steps by one: label the rows by month instead (e.g. "
                f"{index[0]:%Y-%m} for {_stamp(index[0])}, read as the month's first day), "
                "or fit in Python (docs/api-notes.md, 'Calendars')"
            )
        raise _InputError(
            _utc_offsets_message(column, index, where) or _irregular_message(index, where)
        )
    return inferred


def _utc_offsets(column):
    """The UTC offsets (seconds) written in ``column``'s stamps (``+01:00``, ``+0200``,
    ``Z``) where they change from row to row, else None (one offset, or stamps without)."""
    import numpy as np

    parts = column.astype(str).str.extract(r"(?:([+-])(\d{2}):?(\d{2})|(Z))\s*$")
    if parts.isna().all(axis=1).any():
        return None
    sign = np.where(parts[0].to_numpy() == "-", -1, 1)
    hours = parts[1].fillna("0").astype(int).to_numpy()
    minutes = parts[2].fillna("0").astype(int).to_numpy()
    seconds = sign * (hours * 3600 + minutes * 60)
    return seconds if len(np.unique(seconds)) > 1 else None


# zones named by a region, in this order, preferred to the aliases (CET, US/Eastern,
# Etc/GMT-1) that give the same offsets: where several zones fit, the stamps read the same
# in each, and the name is only shown in messages (Europe/Amsterdam rather than Africa/Ceuta)
_REGIONS = ("Europe/", "America/", "Asia/", "Australia/", "Pacific/", "Africa/", "Atlantic/",
            "Indian/", "Antarctica/")


def _zone_rank(zone):
    region = next((i for i, r in enumerate(_REGIONS) if zone.startswith(r)), len(_REGIONS))
    return region, zone


@functools.lru_cache(maxsize=1)
def _ranked_zones() -> tuple:
    """The zoneinfo database's zones in the order they are tried (:func:`_zone_rank`), read
    once: listing them walks the database's files (9 ms a call; a panel's series each
    called it, 9 s for a thousand)."""
    try:
        import zoneinfo

        return tuple(sorted(zoneinfo.available_timezones(), key=_zone_rank))
    except Exception:  # no time zone database
        return ()


def _local_reading(column, index):
    """``index`` (the stamps read in UTC, as their offsets change) in a time zone whose UTC
    offsets at those instants are the ones written: the local times back, on which a daily
    series stays daily across a daylight-saving change (in UTC its days are 23 or 25 hours
    apart). None where the offsets do not change or no zone has them."""
    import numpy as np

    written = _utc_offsets(column)
    if written is None or index.tz is None:
        return None
    zones = _ranked_zones()
    if not zones:  # no time zone database
        return None

    def matches(rows, zone):
        local = index[rows].tz_convert(zone)
        seconds = (local.tz_localize(None) - index[rows].tz_localize(None)).total_seconds()
        return np.array_equal(seconds.to_numpy(), written[rows])

    # a zone is tried on the first and last stamps and those around each change, then on all
    changes = np.flatnonzero(np.diff(written))
    probe = np.unique(np.r_[0, changes, changes + 1, len(written) - 1])
    every = np.arange(len(written))
    for zone in zones:
        try:
            if matches(probe, zone) and matches(every, zone):
                return index.tz_convert(zone)
        except Exception:  # a zone that pandas cannot use
            continue
    return None


def _utc_offsets_message(column, index, where):
    """Why stamps whose UTC offsets change are irregular, when no time zone explained them
    (read in UTC, local days are 23 or 25 hours apart); None for other stamps."""
    import numpy as np

    written = _utc_offsets(column)
    if written is None or index.tz is None:
        return None
    row = int(np.flatnonzero(np.diff(written))[0]) + 1

    def offset(seconds):
        sign = "-" if seconds < 0 else "+"
        return f"{sign}{abs(seconds) // 3600:02d}:{abs(seconds) % 3600 // 60:02d}"

    return (
        f"{where} has stamps whose UTC offsets change ({column.iloc[row - 1]!r} is "
        f"{offset(written[row - 1])}, {column.iloc[row]!r} {offset(written[row])}), as at a "
        "daylight-saving change, and no time zone with those changes was found: they are read "
        "as the same instants in UTC, where they are not evenly spaced (local days are 23 or "
        "25 hours apart). Write the stamps in UTC (series.tz_convert('UTC') before to_csv) "
        "or as local times without offsets (tz_localize(None)); --freq does not help here"
    )


def _yyyymmdd(column) -> bool:
    """Whether a column of whole numbers holds dates written YYYYMMDD (20200131, as many
    databases and spreadsheets export them): eight digits each, every one a valid date. As
    step numbers they would jump at each month's end."""
    import pandas as pd

    if not pd.api.types.is_integer_dtype(column) or not len(column):
        return False
    values = column.to_numpy()
    if not ((values >= 10000101) & (values <= 99991231)).all():
        return False
    parsed = pd.to_datetime(column.astype(str), format="%Y%m%d", errors="coerce")
    return bool(parsed.notna().all())


def _all_months(column) -> bool:
    """Whether a column of whole numbers holds six digits each, every one a valid YYYYMM."""
    import numpy as np
    import pandas as pd

    if not pd.api.types.is_integer_dtype(column) or not len(column):
        return False
    values = column.to_numpy().astype(np.int64)
    month = values % 100
    return bool(((values >= 100001) & (values <= 999912) & (month >= 1) & (month <= 12)).all())


def _yyyymm(column, dated=False) -> bool:
    """Whether a column of whole numbers holds months written YYYYMM (201912, 202001, ...):
    six digits each, every one a valid month, and not evenly spaced as numbers (they jump
    from 201912 to 202001 at each year's end, where step numbers were refused as uneven).
    Read as the months' first days. Months within one year (201901 to 201912) are evenly
    spaced as numbers too and stay step numbers: nothing in them says which they are, unless
    ``dated``: rows whose history is dated (a --future file), which are read as months."""
    import numpy as np

    if not _all_months(column):
        return False
    if dated:  # a --future file after (or a model of) dates: months, however few
        return True
    steps = np.diff(column.to_numpy().astype(np.int64))
    return bool(len(steps) and np.any(steps != steps[0]))


# a time of day alone: 08:00, 8:00:00, 8:00 pm
_TIME_OF_DAY = r"^\s*\d{1,2}:\d{2}(?::\d{2}(?:\.\d+)?)?\s*(?:[AaPp]\.?[Mm]\.?)?\s*$"


# dates written with day and month as numbers, year last: 03/04/2021, 3.4.21, 03-04-2021 12:00
_NUMERIC_DATE = r"^\s*(\d{1,2})[/.\-](\d{1,2})[/.\-]\d{2,4}(?:[ T].*)?$"


def _date_order(column, where, given, given_by=None):
    """The day/month order of numeric dates (``'dmy'`` or ``'mdy'``): ``given``
    (``--date-order``) or what the data shows (a first number above 12 is a day, a second one
    a day too); ``given`` where the dates are not of that form. Where every number is 12 or
    below both readings are dates (01/02/1949 is 1 February or 2 January), and pandas would
    read them month first without a word: refused unless ``given``. ``given_by``: where
    ``given`` was read from (the history's time column), or None for ``--date-order``."""
    parts = column.astype(str).str.extract(_NUMERIC_DATE)
    if parts.isna().any().any():
        return given
    first, second = (parts[i].astype(int).gt(12) for i in (0, 1))
    if first.any() == second.any():
        if first.any() or given is not None:
            return given  # no one order (to_datetime will say which values fail), or said
        raise _InputError(
            f"{where} has dates such as {column.iloc[0]!r} that read as day/month and as "
            "month/day alike (no number above 12 tells them apart): say which with "
            "--date-order dmy (day first) or --date-order mdy (month first), or write the "
            "dates as YYYY-MM-DD"
        )
    shown = "dmy" if first.any() else "mdy"
    if given is not None and given != shown:
        row = int((first if shown == "dmy" else second).to_numpy().argmax())
        other = (
            f"--date-order is {given}"
            if given_by is None
            else f"the {given_by} puts the {'day' if given == 'dmy' else 'month'} first"
        )
        raise _InputError(
            f"{where} has dates such as {column.iloc[row]!r}, which put the "
            f"{'day' if shown == 'dmy' else 'month'} first, but {other}: write both files' "
            "dates in one order"
        )
    return shown


def _parse_dates(column, where, date_order=None, *, panel=False):
    """The dates of ``column``, or an error naming the first that is none (``panel``: the
    stamps of a panel's series, which cannot do without a time column)."""
    import pandas as pd

    if column.astype(str).str.match(_TIME_OF_DAY).all():
        # to_datetime puts bare times on the day it runs: a day of hourly rows was fitted
        # and forecast on today's date, two days of them refused as duplicated stamps
        raise _InputError(
            f"{where} holds times of day without dates (first value {column.iloc[0]!r}): "
            "pandas would put them all on today's date; write the dates too (e.g. "
            "2021-01-31 08:00)"
            + ("" if panel else ", or drop that column and use --no-time-col to number the rows")
        )
    options = {} if date_order is None else {"dayfirst": date_order == "dmy"}
    # dayfirst only for numeric day/month dates: format="mixed" would read 2021-01-02 as
    # 1 February with it
    numeric = bool(column.astype(str).str.match(_NUMERIC_DATE).all())
    attempts = (
        options,  # one format, which pandas infers from the first value
        # stamps with UTC offsets that change (daylight saving time): the same instants in
        # UTC, where an hourly series stays hourly
        {"utc": True, **options},
        # ISO 8601 stamps of varying precision: midnight as a bare date, as Excel and R write it
        # (2021-01-01, 2021-01-01 01:00, ...)
        {"format": "ISO8601"},
        # each value read on its own (01/01/2021, 01/01/2021 01:00, ...); a misread shows in the
        # regularity check that follows
        {"format": "mixed", **(options if numeric else {})},
    )
    with warnings.catch_warnings():
        # "Could not infer format ... falling back to dateutil": fine for a CLI, which then
        # checks that the stamps are regular.
        warnings.simplefilter("ignore", UserWarning)
        # pandas 2.2-2.3: "parsing datetimes with mixed time zones will raise ... unless
        # utc=True": the second attempt reads them with utc=True
        warnings.simplefilter("ignore", FutureWarning)
        # pandas 3: "Parsing '2000Q1' as a quarterly string is deprecated"
        warnings.simplefilter("ignore", DeprecationWarning)
        for attempt in attempts:
            try:
                index = pd.DatetimeIndex(pd.to_datetime(column, **attempt), name=column.name)
            except (ValueError, TypeError, OverflowError):
                continue
            if attempt.get("utc"):
                # the instants in UTC, then in a zone whose offsets change as the stamps' do:
                # their local times, as RNNForecaster gets them from a zone-aware series
                local = _local_reading(column, index)
                return index if local is None else local
            return index
        try:
            # Period labels such as 1990Q1, which to_datetime does not read.
            periods = pd.PeriodIndex([pd.Period(str(value)) for value in column])
            return pd.DatetimeIndex(periods.to_timestamp(how="start"), name=column.name)
        except (ValueError, TypeError, OverflowError):
            pass
        # Which values are dates on their own: most of them means dates in mixed formats.
        mixed = {"format": "mixed", "errors": "coerce", "utc": True}
        alone = pd.to_datetime(column, **mixed, **(options if numeric else {})).notna()
    if alone.mean() >= 0.5:
        raise _InputError(_mixed_dates_message(column, alone.to_numpy(), where))
    raise _InputError(
        f"{where} does not hold dates (first value {column.iloc[0]!r}); choose the time "
        "column with --time-col" + ("" if panel else ", or use --no-time-col if the file has none")
    )


def _check_years(column, index, where):
    """Refuse stamps read into a year before 1000 that their text does not write: a month
    label without its day, ``Jan-19`` or ``01/19``, is read by pandas (dateutil) as the 19th
    of January of year 1, and a monthly series would then be fitted in the wrong century
    without a word. Month labels with the year in full (``Jan-2019``, ``2019-01``) read as
    the month's first day."""
    import re

    import numpy as np

    early = np.asarray(index.year < 1000)
    if not early.any():
        return
    row = int(early.argmax())
    text = str(column.iloc[row])
    if re.search(r"\d{3}", text):  # the year is written (0999-01-01): take it as it is
        return
    raise _InputError(
        f"{where} has stamps such as {text!r} that write no year in full: pandas reads it "
        f"as {_stamp(index[row])} (year {index[row].year}). Write the year with four digits: "
        "for months 2019-01 or Jan-2019 (read as the month's first day), for days "
        "2019-01-19"
    )


def _mixed_dates_message(column, alone, where):
    """Name the first row that is no date, or else the first written unlike the first row."""
    import re

    values = [str(value) for value in column]
    if not alone.all():
        row = int((~alone).argmax())
        odd = f"row {row + 1}, {values[row]!r}, is not a date"
    else:
        shapes = [re.sub(r"\d", "0", value) for value in values]
        row = next((i for i, shape in enumerate(shapes) if shape != shapes[0]), 0)
        odd = f"row 1 is {values[0]!r}, row {row + 1} {values[row]!r}"
    return (
        f"{where} holds dates in mixed formats that do not read as one column ({odd}); write "
        "every stamp in one format, e.g. 2021-01-31 or 2021-01-31 13:00, or fix that row"
    )


def _check_order(index, where):
    import numpy as np

    duplicated = index.duplicated()
    if duplicated.any():
        stamp = index[int(np.flatnonzero(duplicated)[0])]
        # an hour repeated about once a year, each twice: an autumn clock change?
        years = (index.max() - index.min()).days / 365.25
        hours = index[duplicated].floor("h").nunique()  # 15-minute data repeats 4 stamps
        yearly = hours <= years + 1 and index.value_counts().max() == 2
        raise _InputError(
            f"{where} has duplicated stamps (first: {_stamp(stamp)})"
            + (_dst_hint(index) if yearly else "")
            + "; each time step needs exactly one row: aggregate the duplicates first"
        )
    if not index.is_monotonic_increasing:
        row = int(np.flatnonzero(np.diff(index.asi8) < 0)[0]) + 1
        raise _InputError(
            f"{where} is not in time order ({_stamp(index[row])} comes after "
            f"{_stamp(index[row - 1])}): sort "
            "the rows by time"
        )


def _apply_freq(index, freq, where, label=None, *, panel=False):
    """``index`` on ``freq``'s grid; ``label`` names where ``freq`` came from in messages
    (``--freq`` unless said otherwise: the --future file takes the history's)."""
    import pandas as pd

    try:
        offset = pd.tseries.frequencies.to_offset(freq)
    except ValueError as err:
        from tsrnn.datasets._validation import pandas_suggestion

        # pandas names the current spelling of a retired alias ('M' -> 'ME', 'H' -> 'h')
        suggested = pandas_suggestion(err, freq)
        hint = f"; pandas suggests {suggested!r}" if suggested else ""
        start = {"M": "MS", "Q": "QS", "Y": "YS", "A": "YS"}.get(freq)
        if suggested and start:
            hint += f" (the end of each period; {start!r} for its start)"
        raise _InputError(
            f"--freq {freq!r} is not a pandas frequency (e.g. D, W-SUN, MS, QS, h, "
            f"15min){hint}"
        ) from None
    if offset.n <= 0:
        raise _InputError(
            f"--freq {freq!r} steps by {offset.n} {type(offset).__name__}: a frequency "
            "steps forward; write a positive multiple (e.g. D, 2h, MS)"
        )
    if isinstance(index, pd.PeriodIndex):
        index = index.to_timestamp(how="start")
    if not isinstance(index, pd.DatetimeIndex):
        raise _InputError(f"--freq applies to dates, but {where} is indexed by {type(index)}")
    expected = pd.date_range(index[0], periods=len(index), freq=offset)
    freq = freq if isinstance(freq, str) else offset.freqstr
    if len(index) and expected[0] != index[0]:  # the grid starts later: off its anchor
        raise _InputError(
            f"the first stamp of {where}, {_stamp(index[0])}, is not on the grid of "
            f"{label or '--freq'} {freq} (whose next stamp is {_stamp(expected[0])})"
            + (_anchor_hint(index, panel) if label is None else "")
        )
    if not expected.equals(index):
        row = int(next(i for i in range(len(index)) if index[i] != expected[i]))
        raise _InputError(
            f"the stamps of {where} do not follow {label or '--freq'} {freq}: row {row + 1} is "
            f"{_stamp(index[row])}, expected {_stamp(expected[row])}; fill the missing steps"
            + ("" if label else " (or pick the right --freq)")
        )
    return pd.DatetimeIndex(index, freq=offset, name=index.name)


def _anchor_hint(index, panel=False):
    """What --freq fits stamps off the grid of the --freq given (weekly on Mondays: W-MON)."""
    import pandas as pd

    from tsrnn._data import months_on_one_day

    if len(index) > 1 and months_on_one_day(index) and panel:
        # without --freq a panel's such stamps are refused too: they need month labels
        return (
            f": stamps on day {index[0].day} of the month follow no pandas frequency string; "
            f"label the rows by month instead (e.g. {index[0]:%Y-%m}, read as the month's "
            "first day)"
        )
    if len(index) > 1 and months_on_one_day(index):
        return (
            f": stamps on day {index[0].day} of the month follow no pandas frequency string; "
            "leave out --freq, and they are read as steps of whole months"
        )
    steps = index[1:] - index[:-1]
    if len(index) > 1 and (steps == pd.Timedelta(days=7)).all():
        day = index[0].day_name()[:3].upper()
        return f": for weekly stamps on {index[0].day_name()}s pass --freq W-{day}"
    return (
        "; pick a --freq anchored on the stamps (pandas' anchored aliases: W-MON, QS-FEB, "
        "YS-JUL, ...), or leave it out for pandas to infer one"
    )


def _irregular_message(index, where):
    import numpy as np
    import pandas as pd

    if (index == index.normalize()).all() and (index.day_of_week < 5).all():
        missing = pd.bdate_range(index[0], index[-1]).difference(index)
        if len(missing) and len(missing) <= max(1, len(index) // 10):  # holidays: a few
            return (
                f"{where} holds business days (Monday to Friday), but {_stamp(missing[0])} "
                f"is missing{f' ({len(missing)} days in all)' if len(missing) > 1 else ''}: "
                "holidays? The command line has no holiday calendar. Fill in the missing "
                "days (e.g. with the day before's value), or fit in Python on an index with a "
                "pandas CustomBusinessDay frequency that lists the holidays "
                "(docs/api-notes.md, 'Calendars')"
            )
    steps = np.diff(index.asi8)
    values, counts = np.unique(steps, return_counts=True)
    usual = values[np.argmax(counts)]
    row = int(np.flatnonzero(steps != usual)[0])
    step = pd.Timedelta(int(usual), unit=index.unit)
    gap = index[row + 1] - index[row]
    dst = _dst_hint(index) if gap - step == pd.Timedelta(hours=1) else ""
    if step % pd.Timedelta(days=1) == pd.Timedelta(0):
        step = f"{step.days} day" + ("s" if step.days != 1 else "")
    return (
        f"{where} has no regular frequency (pandas could not infer one): most steps are "
        f"{step}, but {_stamp(index[row])} is followed by {_stamp(index[row + 1])}{dst}. The "
        "model needs one row per time step: fill in the missing stamps (e.g. with pandas "
        ".asfreq() and interpolation) or, if the stamps follow a pandas frequency that it did "
        "not infer, pass it with --freq"
    )


def _dst_hint(index):
    """For local times without UTC offsets, an hour skipped (spring) or repeated (autumn)
    once a year is a daylight-saving change, not a gap to fill or a row to aggregate: say so.
    Empty for stamps with offsets or steps of a day or more."""
    import numpy as np
    import pandas as pd

    if index.tz is not None or len(index) < 2:
        return ""
    if np.median(np.diff(index.asi8)) >= pd.Timedelta(days=1) / pd.Timedelta(1, unit=index.unit):
        return ""
    return (
        " (if the stamps are local times, a daylight-saving change: clocks skip an hour in "
        "spring and repeat one in autumn; write the stamps in UTC, or with their UTC offsets "
        "as pandas' to_csv writes a zone-aware series, e.g. 2021-03-28 03:00:00+02:00, which "
        "are read in their time zone)"
    )


def _stamp(value):
    """A time stamp as people write it: the date alone at midnight."""
    import pandas as pd

    if isinstance(value, tuple):  # a panel's row: (series id, time)
        key, time = value
        return f"series {str(key)!r}, {_stamp(time)}"
    if isinstance(value, pd.Timestamp) and value == value.normalize():
        return str(value.date())
    return str(value)


def _choose_targets(frame, covariates, args):
    import pandas as pd

    for name in covariates:
        _require_column(frame, name, "--covariates")
        _require_numeric(frame, name, "covariate", allow_bool=True)
    if args.target:
        targets = list(args.target)
        for name in targets:
            _require_column(frame, name, "--target")
            _require_numeric(frame, name, "target")
            if name in covariates:
                raise _InputError(f"column {name!r} is both a target and a covariate")
    else:
        # every numeric column not already a covariate; True/False columns are flags (inputs
        # at most), not series to forecast
        candidates = [name for name in frame.columns if name not in covariates]
        flags = [name for name in candidates if pd.api.types.is_bool_dtype(frame[name])]
        # a column without a value (a trailing comma on every line) reads as numbers (NaN)
        empty = [name for name in candidates if frame[name].isna().all()]
        targets = [
            name
            for name in candidates
            if name not in flags
            and name not in empty
            and pd.api.types.is_numeric_dtype(frame[name])
        ]
        skipped = [
            name for name in candidates if name not in targets and name not in flags + empty
        ]
        # printed even with -q (which hides the summary only): the forecast lacks these columns
        _note_skipped(frame, skipped, flags, empty)
        if not targets and not len(frame.columns):
            # (--target could name nothing: it was told columns [] and to name one)
            used = " and ".join(
                ([] if args.no_time_col else ["its time column"])
                + ([f"its series id column {args.id_col!r}"] if args.id_col else [])
            )
            raise _InputError(
                f"the file has no column besides {used}: there are no values to forecast; "
                "add a column of the series' values"
            )
        if not targets:
            # (every column was left out, each with a note saying why: --target would name
            # one and be refused for the same reason)
            raise _InputError(
                f"no numeric column to forecast (columns: {list(frame.columns)}): each was "
                "left out, as the note(s) above say; make the values of the one to forecast "
                "numbers"
            )
    for name in [*targets, *covariates]:
        missing = frame[name].isna().to_numpy()
        if missing.any():
            raise _InputError(
                f"column {name!r} has {int(missing.sum())} missing value(s) (first at "
                f"{_stamp(frame.index[missing.argmax()])}); fill or drop them first"
            )
        if pd.api.types.is_numeric_dtype(frame[name].dtype):
            _refuse_infinite(frame, name, "", "replace them with real values or drop those rows")
    return targets


def _refuse_infinite(frame, name, where, fix):
    """Refuse infinite values in ``frame[name]`` before the fit, naming how many and the
    first one's stamp; ``where``: a prefix naming the file, ``fix``: what to do."""
    import numpy as np

    infinite = np.isinf(frame[name].to_numpy(dtype=float))
    if infinite.any():
        raise _InputError(
            f"{where}column {name!r} has {int(infinite.sum())} infinite value(s) (first at "
            f"{_stamp(frame.index[infinite.argmax()])}); {fix} first"
        )


def _note_skipped(frame, skipped, flags, empty=()):
    """Tell on stderr which columns the default targets leave out, and why."""
    import pandas as pd

    commas = [name for name in skipped if _comma_numbers(frame[name]) is not None]
    text = [name for name in skipped if name not in commas]
    # numbers with a few odd values among them ('-', '(3.5)'): the column was dropped for
    # those alone, which the note must say (it said only "non-numeric")
    mostly = {}
    for name in text:
        column = frame[name]
        numbers = pd.to_numeric(column, errors="coerce")
        odd = column.notna() & numbers.isna()
        if numbers.notna().sum() > odd.sum() > 0:
            at = int(odd.to_numpy().argmax())
            mostly[name] = (int(odd.sum()), column.iloc[at], _stamp(column.index[at]))
    text = [name for name in text if name not in mostly]
    if text:
        print(f"tsrnn: ignoring non-numeric column(s) {text}", file=sys.stderr)
    for name, (n, example, where) in mostly.items():
        print(
            f"tsrnn: ignoring column {name!r}: it holds numbers, and {n} value(s) that are "
            f"not, first {example!r} at {where}; to forecast it, make those numbers (a "
            "missing value filled in, e.g. with the step before's)",
            file=sys.stderr,
        )
    for name in commas:
        print(
            f"tsrnn: ignoring column {name!r}, read as text: {_comma_hint(frame[name])}",
            file=sys.stderr,
        )
    if empty:
        print(f"tsrnn: ignoring empty column(s) {list(empty)} (no values)", file=sys.stderr)
    if flags:
        print(
            f"tsrnn: ignoring True/False column(s) {flags} (to use one as a model input, name "
            "it with --covariates)",
            file=sys.stderr,
        )


# a number written with a decimal comma ("100,5", "-0,25", "1.234,5"), or a whole number
_DECIMAL_COMMA = r"\s*[-+]?\d[\d.]*(?:,\d+)?\s*"
# a number with commas between groups of three digits ("1,500", "12,345.5"), or a plain one
_THOUSANDS = r"\s*[-+]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?\s*"


def _comma_numbers(column):
    """How a text column's values hold numbers written with commas: ``(kind, example)``, kind
    ``'decimal'`` (``'100,5'``), ``'thousands'`` (``'1,234,567'``, ``'1,500.25'``) or
    ``'either'`` (``'1,500'``: 1500 or 1.5), with the first value that has a comma; None where
    the values are not all such numbers."""
    import pandas as pd

    values = column.dropna()
    if pd.api.types.is_numeric_dtype(column) or not len(values):
        return None
    values = values.astype(str)
    with_comma = values[values.str.contains(",", regex=False)]
    if not len(with_comma):
        return None
    example = with_comma.iloc[0]
    if values.str.fullmatch(_THOUSANDS).all():
        # several groups, or a decimal point in any value, can only be thousands separators
        groups = with_comma.str.count(",").gt(1).any()
        sure = groups or values.str.contains(".", regex=False).any()
        return ("thousands" if sure else "either"), example
    if values.str.fullmatch(_DECIMAL_COMMA).all():
        return "decimal", example
    return None


def _comma_hint(column):
    """What to do about a text column of numbers written with commas (see _comma_numbers)."""
    kind, example = _comma_numbers(column)
    convert = "pandas.read_csv(path, {}).to_csv(new_path, index=False)"
    if kind == "decimal":
        return (
            f"its numbers have a decimal comma (e.g. {example!r}): convert the file to decimal "
            f"points, e.g. {convert.format('decimal=' + repr(','))}"
        )
    if kind == "thousands":
        return (
            f"its numbers have thousands separators (e.g. {example!r}): convert the file to "
            f"plain numbers, e.g. {convert.format('thousands=' + repr(','))}"
        )
    return (
        f"its numbers have commas (e.g. {example!r}) that may separate thousands (1500) or "
        f"be decimal commas (1.5): convert the file to plain numbers with the reading that "
        f"applies, e.g. {convert.format('thousands=' + repr(','))} or "
        f"{convert.format('decimal=' + repr(','))}"
    )


def _require_column(frame, name, option):
    import pandas as pd

    levels = list(frame.index.names)
    if name not in frame.columns and name in levels:
        # the time column (and a panel's id column) index the rows: "unknown column" misled
        role = "series id" if len(levels) > 1 and name == levels[0] else "time"
        numbered = isinstance(frame.index, pd.RangeIndex)  # --no-time-col's row numbers
        raise _InputError(
            f"{name!r} is the {'row number' if numbered else role} column ({option}), which "
            f"labels the rows; choose among the columns of values, {list(frame.columns)}"
            + (
                ", or pick another time column with --time-col"
                if role == "time" and not numbered
                else ""
            )
        )
    if name not in frame.columns:
        raise _InputError(
            f"unknown column {name!r} ({option}); the columns are {list(frame.columns)}"
        )


def _require_numeric(frame, name, role, allow_bool=False):
    """Refuse a column the model cannot take as ``role``; True/False columns are taken as
    covariates (``allow_bool``), as RNNForecaster does, but not as targets."""
    import pandas as pd

    column = frame[name]
    if pd.api.types.is_bool_dtype(column):
        if allow_bool:
            return
        raise _InputError(
            f"the {role} column {name!r} holds True/False values, not numbers to forecast; "
            "use it as a model input with --covariates, or choose another column"
        )
    if not pd.api.types.is_numeric_dtype(column):
        if _comma_numbers(column) is not None:
            raise _InputError(f"the {role} column {name!r} is read as text: {_comma_hint(column)}")
        # the first value that is no number (a placeholder such as '-' or 'n/a' makes the
        # whole column text)
        odd = column.notna() & pd.to_numeric(column, errors="coerce").isna()
        where = ""
        if odd.any():
            at = int(odd.to_numpy().argmax())
            example = column.iloc[at]
            where = f" at {_stamp(column.index[at])}"
        else:
            example = column.dropna().iloc[0] if column.notna().any() else None
        raise _InputError(
            f"the {role} column {name!r} is not numeric (dtype {column.dtype}): it holds "
            f"{example!r}{where}; convert it to numbers (a missing value filled in, e.g. "
            "with the step before's), or choose another column"
        )


def _read_future(args, history, model):
    """Read --future with the time layout of the history (or of the loaded model)."""
    import pandas as pd

    if args.future is None:
        return None
    freq = args.freq
    if freq is None and history is not None:
        # the offset itself: pd.DateOffset(months=1)'s string does not read back
        freq = getattr(history.index, "freq", None)
    if freq is None and model is not None:
        freq = getattr(model, "freq_", None)
        if model._layout_["axis"].kind == "period":
            # a model fitted in Python on periods: a CSV holds them as their first moments
            # ('2024-01' for the month, as to_csv writes them), on the grid of the periods'
            # starts ('MS'); the period's own 'M' is not a frequency of time stamps
            freq = _period_start_freq(model._ends_[0])
    # A short --future file cannot show its own frequency: it has the history's.
    label = None if args.freq is not None else "the frequency of the history,"
    if args.freq is None and history is None:
        label = "the frequency of the loaded model,"
    # data that counts steps: the future rows continue its step numbers (not dates)
    steps_from = None
    axis = None if model is None else model._layout_["axis"]
    if axis is not None and axis.kind == "range" and model._layout_["ids"] is None:
        fitted = "the data the model was fitted on"
        steps_from = (int(model._ends_[0]) + axis.step, axis.step, fitted)
    elif model is None and history is not None and isinstance(history.index, pd.RangeIndex):
        step = history.index.step
        steps_from = (int(history.index[-1]) + step, step, "the history's time column")
    options = argparse.Namespace(
        **{
            **vars(args),
            "freq": freq,
            "freq_label": label,
            "future_file": True,
            "id_col": None,
            "steps_from": steps_from,
        }
    )
    try:
        future = _read_csv(args.future, options)
    except _InputError as exc:
        hint = _covariate_as_time_hint(args, model)
        if hint is None:
            raise
        raise _InputError(f"{exc}; {hint}") from None
    if args.horizon is not None and args.horizon != len(future):
        raise _InputError(
            f"--horizon {args.horizon} but --future {args.future!r} has {len(future)} rows: the "
            "forecast covers the future rows, so leave out --horizon or make them agree"
        )
    if (
        model is not None
        and model._layout_["axis"].kind == "period"
        and isinstance(future.index, pd.DatetimeIndex)
    ):
        # the periods' first moments, back to the model's periods (as predict takes them)
        future.index = future.index.to_period(model._layout_["axis"].freq)
    if args.no_time_col and model is not None:
        # Without time stamps the future rows continue the data the loaded model was fitted
        # on, whatever its time axis (a CSV beside it is only drawn as history): rows numbered
        # from 0 carry no position, and the forecasts get the model's next steps or stamps.
        future.index = pd.RangeIndex(len(future))
    elif args.no_time_col and history is not None:
        # Without time stamps the future rows simply continue the numbering of the history.
        start = len(history)
        future.index = pd.RangeIndex(start, start + len(future), name=history.index.name)
    return future


def _period_start_freq(last):
    """The time-stamp frequency of the starts of the periods after ``last`` ('MS' after
    monthly periods, 'QS-OCT' after quarters ending in December), or None where pandas
    cannot tell one."""
    import pandas as pd

    from tsrnn._data import inferred_freq

    starts = pd.PeriodIndex([last + k for k in range(1, 5)]).to_timestamp(how="start")
    return inferred_freq(starts)


def _covariate_as_time_hint(args, model):
    """For a --future file refused as to its time column: where that column (its first) is
    a covariate the model takes, the file may have no time column at all."""
    import io

    import pandas as pd

    if args.no_time_col or args.time_col is not None:
        return None
    fitted = getattr(model, "feature_names_in_", None)  # an array: no truth value
    names = list(args.covariates or []) + ([] if fitted is None else list(fitted))
    try:
        columns = pd.read_csv(io.StringIO(_read_text(args.future)), nrows=0).columns
    except Exception:  # the file's own problem was reported already
        return None
    if len(columns) and str(columns[0]).strip() in map(str, names):
        return (
            f"its first column, {str(columns[0]).strip()!r}, is a covariate of the model: if the "
            "file has no time column, pass --no-time-col (its rows then follow the data)"
        )
    return None


def _check_future_follows(y, future, path, model=None, model_path=None):
    """The --future rows must start right after the data's last step: before fitting (the
    forecaster checks this again when it forecasts; a wrong file should not cost a whole fit
    first), and for a model loaded from ``model_path`` (``y`` is then None), whose data ended
    where its fit left it, so that the message speaks the command's terms, not the Python
    API's. Data the forecaster would refuse is left to its own message."""
    from tsrnn._data import check_target, future_index, steps_ahead

    if model is not None:
        if model._layout_["ids"] is not None:
            return
        last, axis = model._ends_[0], model._layout_["axis"]
        targets = int(model._layout_["n_targets"])
        whose = f"the data the model in {model_path!r} was fitted on"
    else:
        try:
            data = check_target(y, "y")
        except (ValueError, TypeError):
            return
        if data.ids is not None:
            return
        last, axis = data.ends()[0], data.axis
        targets = int(data.values.shape[1])
        whose = "the data"
    from tsrnn.forecaster import _MAX_FORECAST_VALUES

    try:
        # the forecaster's cap on the steps, before the steps are counted (a mistyped year
        # beside per-second data laid a grid of 42 GiB)
        reach = _MAX_FORECAST_VALUES // targets
        steps = steps_ahead(last, axis, future.index, len(future), "X", max_steps=reach)
    except (ValueError, TypeError) as exc:
        try:
            early = bool(future.index[0] <= last)
        except (TypeError, ValueError, IndexError):  # stamps that do not compare (or none)
            early = False
        if early:
            raise _InputError(
                f"--future {path!r} starts at {_stamp(future.index[0])}, not after the last "
                f"step of {whose} ({_stamp(last)}): its rows are the covariates of the steps "
                f"to forecast; give rows from {_stamp(future_index(last, axis, 1)[0])}, the "
                "step right after it"
            ) from None
        message = str(exc).replace("X reaches", "its rows reach").replace("X's", "its")
        message = message.replace(" seen by fit or update", "")
        raise _InputError(f"--future {path!r}: {_as_cli_options(message)}") from None
    if steps[0] != 1:
        raise _InputError(
            f"--future {path!r} starts {int(steps[0])} steps after the last step of {whose}: "
            "the covariates of the steps in between are unknown; give rows from the step "
            "right after it"
            + (
                ", or fit a model on the data up to the step before them (the command line "
                "has no update)"
                if model is not None
                else ""
            )
        )


def _select_future(future, covariates, path):
    missing = [name for name in covariates if name not in future.columns]
    if missing:
        raise _InputError(
            f"--future {path!r} lacks the covariate column(s) {missing}; its columns are "
            f"{list(future.columns)}"
        )

    for name in covariates:
        _require_numeric(future, name, "future covariate", allow_bool=True)
        if future[name].isna().any():
            raise _InputError(f"--future {path!r}: column {name!r} has missing values")
        # refused before the fit, as the history's are (the forecast would fail after it)
        _refuse_infinite(
            future,
            name,
            f"--future {path!r}: ",
            "replace them with the covariate's real values for those steps",
        )
    return future[covariates]


# --------------------------------------------------------------------------------------------
# model
# --------------------------------------------------------------------------------------------


def _make_estimator(args):
    from tsrnn import RNNForecaster

    params = {param: getattr(args, dest) for dest, param in _ESTIMATOR_OPTIONS if dest in args}
    params.setdefault("random_state", 0)  # --random-state's default: a command is reproducible
    params["verbose"] = min(args.verbose, 1)
    return RNNForecaster(**params)


def _fit(model, X, y):
    start = time.perf_counter()
    try:
        # the estimator's verbose summary is printed: to stderr here, as every message of the
        # command, so that stdout carries the forecast CSV alone
        with contextlib.redirect_stdout(sys.stderr), _warnings_as_notes():
            if X is None:
                model.fit(y)
            else:
                model.fit(X, y)
    except (ValueError, TypeError) as exc:
        raise _InputError(f"cannot fit the model: {_as_cli_options(str(exc))}") from None
    return time.perf_counter() - start


@contextlib.contextmanager
def _warnings_as_notes():
    """The estimator's warnings (ConvergenceWarning, ...) as one line each on stderr, in the
    command's terms (``--max-epochs 3``, not ``max_epochs=3``), without Python's file, line
    and source line; others as Python shows them. Python's filters still decide which are
    shown."""
    caught = []
    try:
        with warnings.catch_warnings(record=True) as caught:
            yield
    finally:
        # shown once recording has stopped: a warning shown while recording would be
        # appended to the list being shown, without end where the filter is "always"
        for w in caught:
            if issubclass(w.category, UserWarning):
                print(f"tsrnn: warning: {_as_cli_options(str(w.message))}", file=sys.stderr)
            else:
                warnings.showwarning(w.message, w.category, w.filename, w.lineno)


def _as_cli_options(message: str) -> str:
    """The estimator's suggested fixes in the command's terms: ``window='auto'`` becomes
    ``--window auto``, ``early_stopping=False`` ``--no-early-stopping``."""
    import re

    flags = {param: "--" + dest.replace("_", "-") for dest, param in _ESTIMATOR_OPTIONS}

    def option(match):
        param, value = match.group(1), match.group(2).strip("'\"")
        if value in ("True", "False") and param == "early_stopping":
            return flags[param] if value == "True" else "--no-" + flags[param][2:]
        return f"{flags[param]} {value}"

    # the estimator's 'horizon' is --model-horizon here (--horizon is the forecast's length)
    message = re.sub(r"\ba smaller horizon\b", "a smaller --model-horizon", message)
    message = re.sub(r"\bmultiple of horizon\b", "multiple of --model-horizon", message)
    # the command line has no update(): a model is brought up to date by fitting it again
    message = re.sub(
        r"\bupdate\(\) the model with (?:the observed gap|the rows observed in between) first",
        "fit a model on the data up to the step before them (the command line has no update)",
        message,
    )
    # time stamps as the CSV writes them, not as Python's repr: Timestamp('2020-01-01 00:00:00')
    message = re.sub(
        r"\b(?:Timestamp|Period)\('([^']*)'(?:, (?:tz|freq)=[^)]*)?\)",
        lambda m: m.group(1)[:-9] if m.group(1).endswith(" 00:00:00") else m.group(1),
        message,
    )
    names = "|".join(sorted(flags, key=len, reverse=True))
    # scikit-learn's parameter check: "The 'dropout' parameter of RNNForecaster must be a
    # float in the range [0.0, 1.0) ... or None. Got 2.0 instead."
    checked = re.match(rf"The '({names})' parameter of RNNForecaster must be (.*)", message)
    if checked:
        rule = checked.group(2).replace(" or None.", " or none.")
        rule = rule.replace(", an instance of 'numpy.random.mtrand.RandomState'", "")
        return f"{flags[checked.group(1)]} must be {rule}"
    value = r"'[^']*'|\"[^\"]*\"|[\w+-]+(?:\.[\w+-]+)*"  # a number's point, not a full stop
    message = re.sub(rf"(?<![\w.])({names})=({value})", option, message)
    # a parameter named alone ("raise max_epochs"): only the names with an underscore, which
    # no English word is ("window" and "patience" may be words of the message)
    alone = "|".join(sorted((n for n in flags if "_" in n), key=len, reverse=True))
    return re.sub(rf"(?<![\w.-])({alone})(?![\w=])", lambda m: flags[m.group(1)], message)


def _predict(model, what):
    try:
        with _warnings_as_notes():
            return model.predict(what)
    except (ValueError, TypeError) as exc:
        raise _InputError(f"cannot forecast: {_as_cli_options(str(exc))}") from None


def _save_model(model, path):
    import joblib

    try:
        joblib.dump(model, path)
    except OSError as exc:
        raise _InputError(f"cannot save the model to {path!r}: {exc}") from None


def _load_model(path):
    import joblib

    if not os.path.isfile(path):
        raise _InputError(f"no such model file: {path!r}")
    try:
        with _warnings_as_notes():  # a version mismatch: one line, as the fit's warnings
            model = joblib.load(path)
    except Exception as exc:  # unpickling raises anything; all mean "not a saved model"
        raise _InputError(
            f"{path!r} is not a model saved by 'tsrnn forecast --save-model' "
            f"({type(exc).__name__}: {exc})"
        ) from None
    from sklearn.exceptions import NotFittedError
    from sklearn.utils.validation import check_is_fitted

    from tsrnn import RNNForecaster

    if not isinstance(model, RNNForecaster):
        what = f"the class {model.__name__}" if isinstance(model, type) else (
            f"a {type(model).__name__}"
        )
        raise _InputError(
            f"{path!r} holds {what}, not a fitted tsrnn RNNForecaster: give a model saved by "
            "'tsrnn forecast --save-model' (or a fitted RNNForecaster saved with joblib.dump)"
        )
    try:
        check_is_fitted(model)
    except NotFittedError:
        raise _InputError(
            f"{path!r} holds an RNNForecaster that was never fitted: save it after fit"
        ) from None
    if model._layout_["kind"] == "array":
        raise _InputError(
            f"{path!r} holds a model fitted on a NumPy array: its forecasts carry no time "
            "stamps or column names to write. Fit it on a pandas Series or DataFrame to use "
            "it here, or forecast with it from Python"
        )
    if model._layout_["covariates"] and model._layout_["ids"] is not None:
        raise _InputError(
            f"{path!r} holds a panel model fitted with covariates: the command line reads "
            "--future for one series only. Forecast with it from Python, predict(X) with X "
            "indexed by (series id, time)"
        )
    if model._layout_["covariates"] and getattr(model, "feature_names_in_", None) is None:
        raise _InputError(
            f"{path!r} holds a model fitted with covariates given as an array: --future's "
            "columns are matched to the covariates by name, and these have none. Fit it with "
            "the covariates as a DataFrame to use it here, or forecast with it from Python"
        )
    return model


# --------------------------------------------------------------------------------------------
# output
# --------------------------------------------------------------------------------------------


def _as_frame(forecast):
    import pandas as pd

    if isinstance(forecast, pd.Series):
        return forecast.to_frame(name=forecast.name if forecast.name is not None else "forecast")
    return forecast


def _write_forecast(forecast, output):
    frame = _as_frame(forecast)
    if output is None:
        try:
            frame.to_csv(sys.stdout)
            sys.stdout.flush()
        except BrokenPipeError:
            # The reader stopped early (e.g. '| head'): not an error. Point stdout at devnull so
            # that Python's final flush does not raise again.
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        except OSError as exc:  # a full disk, a closed or read-only descriptor
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())  # the final flush would fail again
            raise _InputError(f"cannot write the forecast to standard output: {exc}") from None
        return
    try:
        frame.to_csv(output)
    except OSError as exc:
        raise _InputError(f"cannot write the forecast to {output!r}: {exc}") from None


def _warn_if_data_runs_past(history, forecast):
    import pandas as pd

    if isinstance(history.index, pd.MultiIndex) or not len(history) or not len(forecast):
        return
    # False: the forecast starts at or before the data's end (None: they cannot be compared)
    if _later(forecast.index[0], history.index[-1]) is False:
        print(
            f"tsrnn: note: the data runs to {_stamp(history.index[-1])}, past the end of the "
            "data the loaded model was fitted on; the forecast starts at "
            f"{_stamp(forecast.index[0])}. Drop "
            "--load-model to refit on this data.",
            file=sys.stderr,
        )


def _later(a, b):
    """Whether time stamp ``a`` comes after ``b``; None where the two cannot be compared
    (step numbers and dates, a zone and none): the data beside a loaded model is checked to
    be like its own, and this keeps a comparison from failing anyway."""
    import pandas as pd

    a, b = (x.to_timestamp() if isinstance(x, pd.Period) else x for x in (a, b))
    try:
        return bool(a > b)
    except TypeError:
        return None


def _history_for_plot(history, forecast):
    columns = list(_as_frame(forecast).columns)
    missing = [name for name in columns if name not in history.columns]
    if missing:
        raise _InputError(
            f"cannot draw the history: the data has no column(s) {missing} that the model forecasts"
        )
    return history[columns]


def _title(source, model, horizon):
    cell = getattr(model, "cell", None)
    what = f"{cell.upper()} " if isinstance(cell, str) else ""
    return f"{source}: {horizon}-step {what}forecast (tsrnn)"


_MAX_PANELS = 6
_MAX_HISTORY = 500


def _plot(history, forecast, path, *, title):
    import pandas as pd

    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.dates import AutoDateLocator, ConciseDateFormatter
        from matplotlib.figure import Figure
    except ImportError:
        raise _InputError("--plot needs matplotlib: pip install 'tsrnn[plot]'") from None

    panels = _plot_panels(history, _as_frame(forecast))
    shown = panels[:_MAX_PANELS]
    if len(panels) > len(shown):
        title = f"{title}, first {len(shown)} of {len(panels)} series"
    # A Figure with its own Agg canvas: no pyplot, so no global state and no display needed.
    figure = Figure(figsize=(9, 1.4 + 2.3 * len(shown)), layout="constrained")
    FigureCanvasAgg(figure)
    axes = figure.subplots(len(shown), 1, sharex=True, squeeze=False)[:, 0]
    for ax, (label, past, future) in zip(axes, shown):
        if past is not None and len(past):
            name = "history"
            if len(past) > _MAX_HISTORY:
                # A long history would squeeze the forecast into a few pixels.
                past, name = past.iloc[-_MAX_HISTORY:], f"history (last {_MAX_HISTORY} steps)"
            ax.plot(_plot_x(past.index), past.to_numpy(), label=name, lw=1.2)
            if _later(future.index[0], past.index[-1]):
                # Start the forecast line at the last observation, so the two lines join.
                joint = past.iloc[-1:].set_axis(_plot_x(past.index[-1:]))
                future = pd.concat([joint, future.set_axis(_plot_x(future.index))])
        ax.plot(
            _plot_x(future.index),
            future.to_numpy(),
            label="forecast",
            lw=1.6,
            color="tab:orange",
        )
        ax.set_ylabel(label)
        ax.grid(alpha=0.3)
    axes[0].legend(loc="upper left")
    if isinstance(_plot_x(shown[0][2].index), pd.DatetimeIndex):
        locator = AutoDateLocator()
        axes[-1].xaxis.set_major_locator(locator)
        axes[-1].xaxis.set_major_formatter(ConciseDateFormatter(locator))
    time_name = shown[0][2].index.name
    axes[-1].set_xlabel(str(time_name) if time_name is not None else "time step")
    figure.suptitle(title)
    try:
        figure.savefig(path, dpi=110, format="png")
    except (OSError, ValueError) as exc:
        raise _InputError(f"cannot write the plot to {path!r}: {exc}") from None


def _plot_panels(history, forecast):
    """One (label, history or None, forecast) triple of Series per target and series id."""
    import pandas as pd

    panels = []
    for column in forecast.columns:
        future = forecast[column]
        past = None if history is None else history[column]
        if past is not None and (
            isinstance(past.index, pd.MultiIndex) != isinstance(future.index, pd.MultiIndex)
        ):
            past = None  # one series beside a panel: nothing to draw it with
        if isinstance(future.index, pd.MultiIndex):
            # A panel (series id, time): one plot per series.
            for key, part in future.groupby(level=0, sort=False):
                known = past is not None and key in past.index.get_level_values(0)
                own = past.xs(key, level=0) if known else None
                label = f"{key}" if len(forecast.columns) == 1 else f"{column} {key}"
                panels.append((label, own, part.droplevel(0)))
        else:
            panels.append((str(column), past, future))
    return panels


def _plot_x(index):
    import pandas as pd

    if isinstance(index, pd.PeriodIndex):
        return index.to_timestamp()
    return index


def _summary(model, source, y, forecast, fit_seconds, args):
    import pandas as pd

    index = forecast.index
    per_series = ""
    steps = len(index)
    if isinstance(index, pd.MultiIndex):
        n_series = index.get_level_values(0).nunique()
        per_series = f" for each of {n_series} series" if n_series else ""
        # the steps of each series (they may end at different times: the span covers all)
        steps = len(index) // max(n_series, 1)
        index = index.get_level_values(-1).unique().sort_values()
    if not len(index):
        span = "nothing"
    elif isinstance(index, pd.DatetimeIndex) and not (index == index.normalize()).all():
        span = f"{index[0]} to {index[-1]}"
    else:
        span = f"{_stamp(index[0])} to {_stamp(index[-1])}"
    if fit_seconds is None:
        head = f"tsrnn: loaded {type(model).__name__} from {args.load_model}"
    else:
        n_epochs = getattr(model, "n_epochs_", "?")
        best = getattr(model, "best_epoch_", None)
        epochs = f"{n_epochs} epoch{'' if n_epochs == 1 else 's'}"
        epochs += f" (best {best})" if best is not None else ""
        shape = f"{y.shape[0]} steps" + (f" x {y.shape[1]} targets" if y.ndim == 2 else "")
        if isinstance(y.index, pd.MultiIndex):
            n_series = y.index.get_level_values(0).nunique()
            shape = f"{n_series} series, {shape.replace('steps', 'rows', 1)}"
        head = f"tsrnn: fitted on {source} ({shape}) in {fit_seconds:.2f} s, {epochs}"
    where = f"; wrote {args.output}" if args.output is not None else ""
    plot = f"; plot {args.plot}" if args.plot else ""
    saved = f"; model saved to {args.save_model}" if args.save_model else ""
    return f"{head}; forecast {steps} steps{per_series}, {span}{where}{plot}{saved}"
