"""Tests of the ``tsrnn`` command line (tsrnn.cli), run in-process except one subprocess."""

import io
import os
import re
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from tsrnn.cli import build_parser, main

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
FAST = ["--max-epochs", "2", "--hidden-size", "4", "--window", "6"]


@pytest.fixture
def series_csv(tmp_path):
    """A short monthly series with a trend and a season, as a CSV with a date column."""
    index = pd.date_range("2001-01-01", periods=36, freq="MS")
    t = np.arange(36)
    frame = pd.DataFrame(
        {
            "month": index.strftime("%Y-%m-%d"),
            "sales": 50 + t + 8 * np.sin(2 * np.pi * t / 12),
            "returns": 5 + 0.1 * t,
            "region": "north",
        }
    )
    path = tmp_path / "sales.csv"
    frame.to_csv(path, index=False)
    return path


def _run(argv, capsys):
    code = main([str(arg) for arg in argv])
    out, err = capsys.readouterr()
    return code, out, err


def _fails(argv, capsys):
    """Run a command that must be refused; return its stderr."""
    with pytest.raises(SystemExit) as info:
        main([str(arg) for arg in argv])
    out, err = capsys.readouterr()
    assert info.value.code == 2
    assert "Traceback" not in err
    assert out == ""
    assert "usage: tsrnn forecast" in err
    assert err.splitlines()[-1].startswith("tsrnn forecast: error: ")
    return err


# ---------------------------------------------------------------------------- help


def test_help_documents_every_option(capsys):
    parser = build_parser()
    forecast = parser._subparsers._group_actions[0].choices["forecast"]
    with pytest.raises(SystemExit) as info:
        main(["forecast", "--help"])
    assert info.value.code == 0
    text = capsys.readouterr().out
    options = [flag for action in forecast._actions for flag in action.option_strings]
    assert len(options) > 30
    for flag in options:
        assert flag in text
    for action in forecast._actions:
        assert action.help, f"option {action.option_strings or action.dest} has no help"


def test_python_dash_m_help_subprocess():
    result = subprocess.run(
        [sys.executable, "-m", "tsrnn", "--help"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("usage: tsrnn ")
    assert "forecast" in result.stdout


def test_top_level_help_documents_every_option_of_forecast(capsys):
    """API.md: "tsrnn --help documents every option"; it listed only COMMAND."""
    with pytest.raises(SystemExit) as info:
        main(["--help"])
    assert info.value.code == 0
    text = capsys.readouterr().out
    assert text.startswith("usage: tsrnn [-h] [--version] COMMAND")
    forecast = build_parser()._subparsers._group_actions[0].choices["forecast"]
    for flag in (f for action in forecast._actions for f in action.option_strings):
        assert flag in text


def test_scaler_choices_are_the_ones_that_can_be_typed(series_csv, capsys):
    """argparse listed the None that 'none' maps to: "--scaler None" was then refused."""
    err = _fails(["forecast", series_csv, "--scaler", "foo", "-H", "2"], capsys)
    assert "choose from 'standard', 'robust', 'minmax', 'none')" in err and "None" not in err
    assert _run(["forecast", series_csv, "--scaler", "none", "-H", "2", *FAST], capsys)[0] == 0


def test_a_model_of_another_version_loads_with_a_one_line_warning(tmp_path, capsys, monkeypatch):
    """The version warning came as Python shows it: file, line and source line."""
    import tsrnn
    import tsrnn.forecaster

    saved = tmp_path / "m.joblib"
    argv = ["forecast", "--dataset", "air_passengers", "-H", "2", "--save-model", saved]
    with monkeypatch.context() as patch:  # a model saved by another version
        patch.setattr(tsrnn.forecaster, "_version", lambda: "0.0.1")
        assert _run([*argv, *FAST], capsys)[0] == 0
    code, out, err = _run(["forecast", "--load-model", saved, "-H", "2"], capsys)
    assert code == 0 and len(out.splitlines()) == 3
    warning = [line for line in err.splitlines() if "0.0.1" in line]
    assert len(warning) == 1 and warning[0].startswith("tsrnn: warning: ")
    assert tsrnn.__version__ in warning[0]


def test_no_command_is_an_error(capsys):
    with pytest.raises(SystemExit) as info:
        main([])
    assert info.value.code == 2
    assert "required: COMMAND" in capsys.readouterr().err


# ---------------------------------------------------------------------------- bad input


def test_missing_file(tmp_path, capsys):
    err = _fails(["forecast", tmp_path / "nope.csv", "-H", "3"], capsys)
    assert "no such file" in err and "nope.csv" in err


def test_unknown_dataset(capsys):
    err = _fails(["forecast", "--dataset", "no_such_series", "-H", "3"], capsys)
    assert "unknown dataset 'no_such_series'" in err


def test_unknown_target_column(series_csv, capsys):
    err = _fails(["forecast", series_csv, "--target", "profit", "-H", "3"], capsys)
    assert "unknown column 'profit'" in err and "'sales'" in err


def test_non_numeric_target(series_csv, capsys):
    err = _fails(["forecast", series_csv, "--target", "region", "-H", "3"], capsys)
    assert "'region' is not numeric" in err


def test_a_file_of_ids_and_stamps_alone_is_told_it_has_no_values(tmp_path, capsys):
    # "no numeric column to forecast (columns: []); name the target with --target"
    path = tmp_path / "keys.csv"
    path.write_text("id,time\n" + "".join(
        f"{k},2000-0{m}-01\n" for k in "ab" for m in (1, 2, 3)
    ))
    err = _fails(["forecast", str(path), "--id-col", "id", "-H", "2"], capsys)
    assert "no column besides its time column and its series id column 'id'" in err
    assert "--target" not in err


def test_unknown_time_column(series_csv, capsys):
    err = _fails(["forecast", series_csv, "--time-col", "date", "-H", "3"], capsys)
    assert "no column 'date'" in err


def test_time_column_that_is_not_dates(series_csv, capsys):
    err = _fails(["forecast", series_csv, "--time-col", "region", "-H", "3"], capsys)
    assert "does not hold dates" in err and "--no-time-col" in err


def test_irregular_dates_say_how_to_fix(tmp_path, capsys):
    path = tmp_path / "gaps.csv"
    # Thursday 2 Jan is missing (and Sunday 5 Jan is there, so this is not business days).
    days = ["2019-12-31", "2020-01-01", "2020-01-03", "2020-01-04", "2020-01-05"]
    pd.DataFrame({"day": days, "y": [1.0, 2, 3, 4, 5]}).to_csv(path, index=False)
    err = _fails(["forecast", path, "-H", "2"], capsys)
    assert "no regular frequency" in err
    assert "most steps are 1 day," in err
    assert "2020-01-01 is followed by 2020-01-03" in err
    assert "--freq" in err


def test_business_days_with_a_holiday_name_the_missing_day(tmp_path, capsys):
    """The advice was "pass --freq" (as for business days with holidays), which no --freq
    string can follow, and the step named was the weekend's."""
    days = pd.bdate_range("2020-01-01", periods=30).delete(11)  # Thursday 16 January
    path = tmp_path / "bdays.csv"
    pd.DataFrame({"day": days.strftime("%Y-%m-%d"), "sales": np.arange(29.0)}).to_csv(
        path, index=False
    )
    err = _fails(["forecast", path, "-H", "2"], capsys)
    assert "holds business days (Monday to Friday), but 2020-01-16 is missing" in err
    assert "CustomBusinessDay" in err and "pass it with --freq" not in err


def test_yyyymmdd_numbers_are_read_as_dates(tmp_path, capsys):
    """20200131 was read as a step number, refused as uneven at each month's end."""
    days = pd.date_range("2020-01-20", periods=30, freq="D")
    path = tmp_path / "ymd.csv"
    pd.DataFrame({"day": days.strftime("%Y%m%d").astype(int), "y": np.arange(30.0) % 7}).to_csv(
        path, index=False
    )
    code, out, _ = _run(["forecast", path, "-H", "2", *FAST], capsys)
    assert code == 0
    got = pd.read_csv(io.StringIO(out), index_col=0, parse_dates=True).index
    assert list(got) == list(pd.date_range("2020-02-19", periods=2, freq="D"))


def test_yyyymm_numbers_are_read_as_months(tmp_path, capsys):
    """201912, 202001 were read as step numbers and refused as uneven at each year's end."""
    months = pd.date_range("2019-01-01", periods=36, freq="MS")
    path = tmp_path / "ym.csv"
    values = np.arange(36.0) % 12
    pd.DataFrame({"month": months.strftime("%Y%m").astype(int), "y": values}).to_csv(
        path, index=False
    )
    code, out, _ = _run(["forecast", path, "-H", "2", *FAST], capsys)
    assert code == 0
    got = pd.read_csv(io.StringIO(out), index_col=0, parse_dates=True).index
    assert list(got) == list(pd.date_range("2022-01-01", periods=2, freq="MS"))
    # within one year they are evenly spaced numbers too: step numbers, as before
    pd.DataFrame({"t": np.arange(201901, 201913), "y": values[:12]}).to_csv(path, index=False)
    code, out, _ = _run(["forecast", path, "-H", "2", *FAST], capsys)
    assert code == 0
    assert pd.read_csv(io.StringIO(out))["t"].tolist() == [201913, 201914]


def test_a_pandas_index_column_is_not_the_time_column(tmp_path, capsys):
    """df.to_csv() writes the row numbers first, unnamed: they were taken as time steps, the
    dates dropped as "non-numeric", and the forecast labelled 30, 31."""
    days = pd.date_range("2020-01-01", periods=30, freq="D")
    path = tmp_path / "indexed.csv"
    pd.DataFrame({"date": days.strftime("%Y-%m-%d"), "sales": np.arange(30.0) % 7}).to_csv(path)
    err = _fails(["forecast", path, "-H", "2"], capsys)
    assert "has no name and numbers the rows 0, 1, 2" in err and "--time-col" in err
    code, out, err = _run(["forecast", path, "--time-col", "date", "-H", "2", *FAST], capsys)
    assert code == 0 and out.splitlines()[0] == "date,sales"
    assert "ignoring the unnamed first column" in err


def test_a_future_file_without_dates_is_not_blamed_on_freq(tmp_path, capsys):
    index = pd.date_range("2020-01-06", periods=30, freq="W-MON")
    pd.DataFrame(
        {"week": index.strftime("%Y-%m-%d"), "sales": np.arange(30.0) % 4, "promo": 1.0}
    ).to_csv(tmp_path / "h.csv", index=False)
    pd.DataFrame({"promo": [0.0, 1.0]}).to_csv(tmp_path / "f.csv", index=False)
    argv = ["forecast", tmp_path / "h.csv", "--target", "sales", "--covariates", "promo"]
    err = _fails([*argv, "--future", tmp_path / "f.csv"], capsys)
    assert "the history's time stamps are dates" in err and "--freq applies" not in err


def test_spaces_after_commas_and_other_encodings(tmp_path, capsys):
    """"date, sales" named the column ' sales', so --target sales was unknown; a latin-1 file
    got only the codec's error."""
    days = pd.date_range("2020-01-01", periods=30, freq="D").strftime("%Y-%m-%d")
    lines = ["date, sales, temp"] + [f"{d}, {i % 7}.5, {i}" for i, d in enumerate(days)]
    path = tmp_path / "spaced.csv"
    path.write_text("\n".join(lines) + "\n")
    code, out, _ = _run(["forecast", path, "--target", "sales", "-H", "2", *FAST], capsys)
    assert code == 0 and out.splitlines()[0] == "date,sales"
    latin = tmp_path / "latin.csv"
    latin.write_bytes("date,caf\xe9\n".encode("latin-1") + "\n".join(days).encode())
    err = _fails(["forecast", latin, "-H", "2"], capsys)
    assert "is not UTF-8 text" in err and "encoding='latin-1'" in err


def test_warnings_are_one_line_notes_in_the_commands_terms(series_csv, capsys):
    """The estimator's warnings printed Python's file:line and the source line (model.fit(y)),
    and named parameters (max_epochs=2) the command spells otherwise."""
    # one window a step: 20 epochs are past the warm-up, and patience (30) has not run out
    more = ["--batch-size", "1", "--max-epochs", "20"]
    argv = ["forecast", series_csv, "--target", "sales", "-H", "2", *FAST, *more]
    code, _, err = _run(argv, capsys)
    assert code == 0
    note = next(line for line in err.splitlines() if "reached before early stopping" in line)
    assert note.startswith("tsrnn: warning: --max-epochs 20 reached")
    assert "Raise --max-epochs, or set --no-early-stopping" in note
    assert "model.fit" not in err and "ConvergenceWarning" not in err


def test_a_column_name_with_a_comma_can_be_named(tmp_path, capsys):
    """--target "Sales, EUR" was split into 'Sales' and 'EUR', unknown columns."""
    path = _day_csv(tmp_path / "eur.csv", **{"Sales, EUR": 10 + np.arange(30.0) % 7, "x": 1.0})
    code, out, _ = _run(["forecast", path, "--target", "Sales, EUR", "-H", "2", *FAST], capsys)
    assert code == 0 and out.splitlines()[0] == 'day,"Sales, EUR"'
    # the option's whole text names a column: that one, though its pieces name others
    t = np.arange(30.0)
    both = {"Sales": t % 5, "EUR": t % 3, "Sales, EUR": 10 + t % 7}
    path = _day_csv(tmp_path / "both.csv", **both)
    code, out, _ = _run(["forecast", path, "--target", "Sales, EUR", "-H", "2", *FAST], capsys)
    assert code == 0 and out.splitlines()[0] == 'day,"Sales, EUR"'
    code, out, _ = _run(["forecast", path, "--target", "Sales,EUR", "-H", "2", *FAST], capsys)
    assert code == 0 and out.splitlines()[0] == "day,Sales,EUR"


def test_estimator_parameter_checks_speak_the_options(series_csv, capsys):
    """scikit-learn's "The 'dropout' parameter of RNNForecaster must be ... or None" reached
    the command line as is (and '--learning-rate' in its quotes)."""
    argv = ["forecast", series_csv, "--target", "sales", "-H", "2"]
    err = _fails([*argv, "--dropout", "2"], capsys)
    assert "--dropout must be a float in the range [0.0, 1.0). Got 2.0 instead." in err
    err = _fails([*argv, "--clip-norm", "0"], capsys)
    assert "--clip-norm must be a float in the range (0.0, inf) or none." in err
    assert "parameter of RNNForecaster" not in err


def test_a_loaded_model_takes_no_target_and_gets_no_dataset_note(tmp_path, capsys):
    """With --load-model, --target was ignored silently, and a dataset's note said its target
    was forecast whatever the model had been fitted on."""
    saved = tmp_path / "m.joblib"
    argv = ["forecast", "--dataset", "electricity_demand", "-H", "2", *FAST, "--max-epochs", "1"]
    assert _run([*argv, "--target", "temperature", "--save-model", saved], capsys)[0] == 0
    err = _fails(
        ["forecast", "--load-model", saved, "-H", "2", "--target", "demand"], capsys
    )
    assert "--target chooses columns for fitting" in err
    code, out, err = _run(
        ["forecast", "--dataset", "electricity_demand", "--load-model", saved, "-H", "2"], capsys
    )
    assert code == 0 and out.splitlines()[0] == "time,temperature"
    assert "forecasting its target" not in err


def test_a_dataset_with_covariates_forecasts_its_target(capsys):
    """--dataset electricity_demand forecast workday and temperature as targets beside demand
    (workday as 0.99999999), where the dataset names demand its target."""
    argv = ["forecast", "--dataset", "electricity_demand", "-H", "2", *FAST, "--max-epochs", "1"]
    code, out, err = _run(argv, capsys)
    assert code == 0 and out.splitlines()[0] == "time,demand"
    assert "forecasting its target ['demand']" in err and "['workday', 'temperature']" in err


def test_save_model_to_dash_is_refused(capsys):
    argv = ["forecast", "--dataset", "air_passengers", "-H", "2", "--save-model", "-"]
    err = _fails(argv, capsys)
    assert "--save-model writes a file" in err


def test_freq_that_the_stamps_do_not_follow(series_csv, capsys):
    err = _fails(["forecast", series_csv, "--freq", "D", "-H", "3"], capsys)
    assert "do not follow --freq D" in err
    err = _fails(["forecast", series_csv, "--freq", "fortnightly", "-H", "3"], capsys)
    assert "not a pandas frequency" in err


def _mid_month_csv(path, months, periods=40, covariate=False):
    index = pd.date_range("2010-02-15", periods=periods, freq=pd.DateOffset(months=months))
    frame = pd.DataFrame({"day": index.strftime("%Y-%m-%d"), "y": np.sin(np.arange(periods))})
    if covariate:
        frame["promo"] = np.arange(periods) % 3
    frame.to_csv(path, index=False)
    return index


@pytest.mark.parametrize("months", [1, 3])
def test_stamps_on_one_day_of_the_month_are_read_as_whole_months(tmp_path, capsys, months):
    """Monthly or quarterly stamps on the 15th follow no pandas frequency string: they were
    refused as having "no regular frequency" with advice to fill missing stamps (none were
    missing) or pass a --freq, and no --freq worked. They are read as steps of
    pd.DateOffset(months=k), as the forecaster takes them in Python."""
    path = tmp_path / "mid.csv"
    index = _mid_month_csv(path, months)
    code, out, _ = _run(["forecast", path, "-H", "3", *FAST], capsys)
    assert code == 0
    got = pd.read_csv(io.StringIO(out), index_col=0, parse_dates=True).index
    want = pd.date_range(index[-1], periods=4, freq=pd.DateOffset(months=months))[1:]
    assert list(got) == list(want)
    # --freq MS (or QS-FEB) puts the grid on the 1st: the message says to leave it out
    err = _fails(["forecast", path, "--freq", "MS", "-H", "3"], capsys)
    assert "2010-02-15, is not on the grid of --freq MS" in err and "leave out --freq" in err


def test_stamps_on_one_day_of_the_month_with_covariates_and_a_saved_model(tmp_path, capsys):
    path, future, saved = tmp_path / "mid.csv", tmp_path / "future.csv", tmp_path / "m.joblib"
    index = _mid_month_csv(path, 1, covariate=True)
    ahead = pd.date_range(index[-1], periods=3, freq=pd.DateOffset(months=1))[1:]
    pd.DataFrame({"day": ahead.strftime("%Y-%m-%d"), "promo": [1, 2]}).to_csv(future, index=False)
    argv = ["forecast", path, "--target", "y", "--covariates", "promo", "--future", future]
    code, fitted, _ = _run([*argv, "--save-model", saved, *FAST], capsys)
    assert code == 0
    code, loaded, _ = _run(["forecast", "--load-model", saved, "--future", future], capsys)
    assert code == 0 and loaded == fitted
    assert pd.read_csv(io.StringIO(loaded)).day.tolist() == ["2013-06-15", "2013-07-15"]
    # rows that skip a month: the fix named is the command line's, not update()
    late = pd.DataFrame({"day": ["2013-07-15", "2013-08-15"], "promo": [1, 2]})
    late.to_csv(future, index=False)
    err = _fails(["forecast", "--load-model", saved, "--future", future], capsys)
    assert "update()" not in err and "the command line has no update" in err


def test_a_panel_on_one_day_of_the_month_is_told_to_label_months(tmp_path, capsys):
    index = pd.date_range("2010-01-15", periods=30, freq=pd.DateOffset(months=1))
    frame = pd.concat(
        [pd.DataFrame({"id": k, "day": index.strftime("%Y-%m-%d"), "y": 1.0}) for k in "ab"]
    )
    frame.to_csv(tmp_path / "panel.csv", index=False)
    err = _fails(["forecast", tmp_path / "panel.csv", "--id-col", "id", "-H", "2"], capsys)
    assert "day 15 of the month" in err and "label the rows by month" in err
    # and --freq MS is not told to leave --freq out (which the panel refuses, as above)
    argv = ["forecast", tmp_path / "panel.csv", "--id-col", "id", "--freq", "MS", "-H", "2"]
    err = _fails(argv, capsys)
    assert "label the rows by month" in err and "leave out --freq" not in err


def test_weekly_stamps_off_the_freq_anchor_name_the_anchored_alias(tmp_path, capsys):
    """Monday-stamped weeks with --freq W (Sundays) were told to "fill the missing steps"."""
    index = pd.date_range("2020-01-06", periods=30, freq="W-MON")
    path = tmp_path / "weeks.csv"
    pd.DataFrame({"week": index.strftime("%Y-%m-%d"), "y": np.arange(30.0) % 4}).to_csv(
        path, index=False
    )
    err = _fails(["forecast", path, "--freq", "W", "-H", "2"], capsys)
    assert "fill the missing steps" not in err
    assert "for weekly stamps on Mondays pass --freq W-MON" in err
    assert _run(["forecast", path, "--freq", "W-MON", "-H", "2", *FAST], capsys)[0] == 0


def test_a_future_file_of_covariates_alone_is_told_no_time_col(tmp_path, capsys):
    """A loaded step-counted model's --future file holding only the covariate: the column
    was taken as the time column ("counts steps, but not evenly") with no word of
    --no-time-col."""
    data, future, saved = tmp_path / "steps.csv", tmp_path / "f.csv", tmp_path / "m.joblib"
    pd.DataFrame({"v": np.sin(np.arange(40.0)), "promo": np.arange(40) % 3}).to_csv(
        data, index=False
    )
    pd.DataFrame({"promo": [1, 2, 0]}).to_csv(future, index=False)
    argv = ["forecast", data, "--no-time-col", "--target", "v", "--covariates", "promo"]
    assert _run([*argv, "--future", future, "--save-model", saved, *FAST], capsys)[0] == 0
    err = _fails(["forecast", "--load-model", saved, "--future", future], capsys)
    assert "'promo', is a covariate of the model: if the file has no time column" in err
    argv = ["forecast", "--load-model", saved, "--future", future, "--no-time-col"]
    code, out, _ = _run(argv, capsys)
    assert code == 0 and len(out.splitlines()) == 4


def test_duplicated_and_unsorted_stamps(tmp_path, capsys):
    path = tmp_path / "dup.csv"
    days = ["2020-01-01", "2020-01-02", "2020-01-02", "2020-01-03"]
    pd.DataFrame({"day": days, "y": [1.0, 2, 3, 4]}).to_csv(path, index=False)
    assert "duplicated stamps" in _fails(["forecast", path, "-H", "2"], capsys)
    days = ["2020-01-01", "2020-01-03", "2020-01-02", "2020-01-04"]
    pd.DataFrame({"day": days, "y": [1.0, 2, 3, 4]}).to_csv(path, index=False)
    assert "not in time order" in _fails(["forecast", path, "-H", "2"], capsys)


def test_missing_values_in_target(tmp_path, capsys):
    path = tmp_path / "nan.csv"
    days = pd.date_range("2020-01-01", periods=5, freq="D").strftime("%Y-%m-%d")
    pd.DataFrame({"day": days, "y": [1.0, 2, None, 4, 5]}).to_csv(path, index=False)
    err = _fails(["forecast", path, "-H", "2"], capsys)
    assert "'y' has 1 missing value" in err and "2020-01-03" in err


def test_option_combinations(series_csv, capsys):
    assert "--horizon" in _fails(["forecast", series_csv], capsys)
    assert "no data" in _fails(["forecast", "-H", "3"], capsys)
    assert "not both" in _fails(
        ["forecast", series_csv, "--dataset", "air_passengers", "-H", "3"], capsys
    )
    err = _fails(["forecast", series_csv, "--covariates", "returns", "-H", "3"], capsys)
    assert "--future" in err
    assert "whole number >= 1" in _fails(["forecast", series_csv, "-H", "0"], capsys)
    assert "--covariates" in _fails(["forecast", series_csv, "--future", series_csv], capsys)
    err = _fails(
        ["forecast", series_csv, "--covariates", "returns", "--future", series_csv, "-H", "3"],
        capsys,
    )
    assert "--horizon 3 but --future" in err


def test_bad_model_file(tmp_path, capsys):
    path = tmp_path / "model.joblib"
    path.write_bytes(b"not a pickle")
    err = _fails(["forecast", "--load-model", path, "-H", "3"], capsys)
    assert "is not a model saved by" in err
    err = _fails(["forecast", "--load-model", tmp_path / "absent.joblib", "-H", "3"], capsys)
    assert "no such model file" in err


def test_model_options_with_a_loaded_model_are_refused(tmp_path, capsys):
    argv = ["forecast", "--load-model", tmp_path / "m.joblib", "-H", "3"]
    err = _fails([*argv, "--hidden-size", "64", "--cell", "lstm"], capsys)
    assert "--cell, --hidden-size only apply when fitting" in err
    # an explicit seed too: a loaded model draws nothing (it was silently ignored)
    assert "--random-state only applies when fitting" in _fails(
        [*argv, "--random-state", "3"], capsys
    )


def test_every_estimator_parameter_has_an_option(series_csv, capsys, monkeypatch):
    import inspect

    from tsrnn import RNNForecaster
    from tsrnn.cli import _ESTIMATOR_OPTIONS

    offered = {param for _, param in _ESTIMATOR_OPTIONS} | {"verbose"}
    assert offered == set(inspect.signature(RNNForecaster).parameters)
    fitted = []
    monkeypatch.setattr(RNNForecaster, "fit", lambda self, *a: fitted.append(self) or self)
    monkeypatch.setattr(RNNForecaster, "predict", lambda self, h: pd.Series(np.zeros(h)))
    extra = ["--init", "orthogonal", "--clip-value", "0.5", "--dtype", "float64"]
    code, _, _ = _run(["forecast", series_csv, "--target", "sales", "-H", "2", *extra], capsys)
    assert code == 0
    params = fitted[0].get_params()
    assert (params["init"], params["clip_value"], params["dtype"]) == ("orthogonal", 0.5, "float64")
    assert params["random_state"] == 0  # the command's default seed


def test_future_rows_before_the_data_end_are_refused_before_fitting(
    series_csv, capsys, monkeypatch
):
    import tsrnn

    def no_fit(*args, **kwargs):
        raise AssertionError("the model was fitted before --future was checked")

    monkeypatch.setattr(tsrnn.RNNForecaster, "fit", no_fit)
    argv = ["forecast", series_csv, "--target", "sales", "--covariates", "returns"]
    err = _fails([*argv, "--future", series_csv], capsys)
    assert "--future" in err and "starts at 2001-01-01, not after the last step of the data" in err
    assert "give rows from 2004-01-01, the step right after it" in err
    assert "Timestamp(" not in err and "update" not in err  # the Python API's words


def test_future_rows_of_a_loaded_model_are_checked_in_the_commands_words(
    series_csv, tmp_path, capsys
):
    """With --load-model, --future rows starting before the model's data ended were told
    "X starts at Timestamp('2001-01-01 00:00:00') ... seen by fit or update"."""
    model = tmp_path / "m.joblib"
    argv = ["forecast", series_csv, "--target", "sales", "--covariates", "returns", *FAST]
    future = tmp_path / "future.csv"
    months = pd.date_range("2004-01-01", periods=5, freq="MS").strftime("%Y-%m-%d")
    pd.DataFrame({"month": months, "returns": 9.0}).to_csv(future, index=False)
    code, expected, _ = _run([*argv, "--future", future, "--save-model", model], capsys)
    assert code == 0
    code, out, _ = _run(["forecast", "--load-model", model, "--future", future], capsys)
    assert code == 0 and out == expected
    load = ["forecast", "--load-model", model, "--future"]
    err = _fails([*load, series_csv], capsys)
    assert "starts at 2001-01-01, not after the last step of the data the model in " in err
    assert f"'{model}' was fitted on (2003-12-01)" in err
    assert "give rows from 2004-01-01" in err and "Timestamp(" not in err
    gap = tmp_path / "gap.csv"
    pd.DataFrame({"month": months[2:], "returns": 9.0}).to_csv(gap, index=False)
    err = _fails([*load, gap], capsys)
    assert "starts 3 steps after the last step of the data the model in" in err
    assert "update()" not in err and "the command line has no update" in err


def test_verbose_keeps_stdout_for_the_forecast_csv(series_csv, capsys):
    argv = ["forecast", series_csv, "--target", "sales", "-H", "2", "-v", *FAST]
    code, out, err = _run(argv, capsys)
    assert code == 0
    assert out.splitlines()[0] == "month,sales" and len(out.splitlines()) == 3
    assert "RNNForecaster: 2 epochs" in err  # the estimator's summary, on stderr


def test_plot_must_be_a_png_and_is_checked_before_fitting(series_csv, tmp_path, capsys):
    out_csv = tmp_path / "fc.csv"
    argv = ["forecast", series_csv, "--target", "sales", "-H", "2", "-o", out_csv, *FAST]
    for bad in ("forecast.pgn", "forecast.pdf", tmp_path):
        assert "--plot draws a PNG file" in _fails([*argv, "--plot", bad], capsys)
    assert not out_csv.exists()


def test_stamps_with_daylight_saving_offsets_are_one_regular_series(tmp_path, capsys):
    index = pd.date_range("2021-03-27", periods=72, freq="h", tz="Europe/Paris")
    path = tmp_path / "load.csv"
    frame = pd.DataFrame({"time": [t.isoformat() for t in index], "load": np.arange(72.0) % 24})
    frame.to_csv(path, index=False)
    code, out, _ = _run(["forecast", path, "-H", "2", *FAST], capsys)
    assert code == 0
    forecast = pd.read_csv(io.StringIO(out), index_col=0, parse_dates=True)
    assert list(forecast.index) == list(pd.date_range(index[-1], periods=3, freq="h")[1:])


def test_file_without_time_column_forecasts_numbered_steps(tmp_path, capsys):
    path = tmp_path / "counts.csv"
    pd.DataFrame({"count": np.arange(40.0) % 5}).to_csv(path, index=False)
    code, out, _ = _run(["forecast", path, "--no-time-col", "-H", "3", *FAST], capsys)
    assert code == 0
    assert out.splitlines()[0] == "step,count"  # the step column is named, not blank
    forecast = pd.read_csv(io.StringIO(out), index_col="step")
    assert list(forecast.index) == [40, 41, 42] and np.isfinite(forecast["count"]).all()


def test_day_first_dates_are_read_day_first_or_the_order_is_asked_for(tmp_path, capsys):
    # 13/01/2021 can only be day first: the whole column is read so (it was read month first
    # up to the 12th, then refused as "not in time order" for rows that were in order)
    days = pd.date_range("2021-01-13", periods=30, freq="D")
    path = tmp_path / "dmy.csv"
    pd.DataFrame({"day": days.strftime("%d/%m/%Y"), "y": np.arange(30.0) % 7}).to_csv(
        path, index=False
    )
    code, out, _ = _run(["forecast", path, "-H", "2", *FAST], capsys)
    assert code == 0
    got = pd.read_csv(io.StringIO(out), index_col=0, parse_dates=True).index
    assert list(got) == list(pd.date_range("2021-02-12", periods=2, freq="D"))
    assert "put the day first, but --date-order is mdy" in _fails(
        ["forecast", path, "-H", "2", "--date-order", "mdy"], capsys
    )
    # a --future file whose few rows cannot show the order takes the history's
    hist, future = tmp_path / "hist.csv", tmp_path / "future.csv"
    frame = pd.DataFrame(
        {"day": days.strftime("%d/%m/%Y"), "y": np.arange(30.0) % 7, "x": np.arange(30.0) % 3}
    )
    frame.to_csv(hist, index=False)
    ahead = pd.date_range("2021-02-12", periods=2, freq="D")  # 12/02, 13/02: 13 > 12 ...
    pd.DataFrame({"day": ["12/02/2021"], "x": [1.0]}).to_csv(future, index=False)  # ... 12 not
    code, out, _ = _run(
        ["forecast", hist, "--target", "y", "--covariates", "x", "--future", future, *FAST], capsys
    )
    assert code == 0
    got = pd.read_csv(io.StringIO(out), index_col=0, parse_dates=True).index
    assert list(got) == list(ahead[:1])
    # a --future file in the other order: the order is the history's, not a --date-order
    pd.DataFrame({"day": ["02/13/2021"], "x": [1.0]}).to_csv(future, index=False)
    err = _fails(
        ["forecast", hist, "--target", "y", "--covariates", "x", "--future", future], capsys
    )
    assert "put the month first, but the time column 'day' of" in err
    assert "puts the day first" in err and "--date-order is" not in err
    # 01/02/1949 ... 01/12/1949: monthly day first, or daily month first; it was silently
    # forecast as daily data from 1949-01-13
    months = pd.date_range("1949-01-01", periods=12, freq="MS")
    path = tmp_path / "ambiguous.csv"
    pd.DataFrame({"month": months.strftime("%d/%m/%Y"), "y": np.arange(12.0)}).to_csv(
        path, index=False
    )
    assert "read as day/month and as month/day alike" in _fails(
        ["forecast", path, "-H", "2"], capsys
    )
    code, out, _ = _run(["forecast", path, "-H", "2", "--date-order", "dmy", *FAST], capsys)
    assert code == 0
    got = pd.read_csv(io.StringIO(out), index_col=0, parse_dates=True).index
    assert list(got) == list(pd.date_range("1950-01-01", periods=2, freq="MS"))
    code, out, _ = _run(["forecast", path, "-H", "2", "--date-order", "mdy", *FAST], capsys)
    got = pd.read_csv(io.StringIO(out), index_col=0, parse_dates=True).index
    assert list(got) == list(pd.date_range("1949-01-13", periods=2, freq="D"))


def test_headers_that_pandas_would_rename_or_misread_are_refused(tmp_path, capsys):
    dup = tmp_path / "dup.csv"
    dup.write_text("month,sales,sales\n2000-01-01,1,2\n2000-02-01,3,4\n")
    assert "names the column(s) ['sales'] more than once" in _fails(
        ["forecast", dup, "-H", "2"], capsys
    )
    semi = tmp_path / "semi.csv"
    semi.write_text("month;sales\n2000-01-01;1\n2000-02-01;3\n")
    assert "comma-separated" in _fails(["forecast", semi, "-H", "2"], capsys)
    last = tmp_path / "last.csv"
    last.write_text("sales,month\n5,2000-01-01\n9,2000-02-01\n10,2000-03-01\n")
    assert "--time-col" in _fails(["forecast", last, "-H", "2"], capsys)


def test_a_column_named_twice_is_refused_in_the_commands_words(series_csv, capsys):
    err = _fails(["forecast", series_csv, "--target", "sales,sales", "-H", "2"], capsys)
    assert "--target names the column(s) ['sales'] more than once" in err
    assert "y.loc" not in err  # the estimator's Python advice
    argv = ["forecast", series_csv, "--target", "sales", "--target", "sales", "-H", "2"]
    err = _fails(argv, capsys)
    assert "['sales'] more than once" in err


def test_freq_with_only_a_loaded_model_is_refused(tmp_path, capsys):
    # it was silently ignored: the loaded model forecasts at the frequency it was fitted with
    argv = ["forecast", "--load-model", tmp_path / "m.joblib", "-H", "3", "--freq", "D"]
    assert "--freq describes the time stamps of a CSV file" in _fails(argv, capsys)


def test_tab_separated_file_gets_the_separator_hint(tmp_path, capsys):
    path = tmp_path / "tab.csv"
    path.write_text("month\tsales\n2000-01-01\t1\n2000-02-01\t3\n2000-03-01\t4\n")
    err = _fails(["forecast", path, "-H", "2"], capsys)
    assert "comma-separated" in err and "sep='\\t'" in err


def test_true_false_target_is_refused_in_the_commands_words(tmp_path, capsys):
    path = tmp_path / "flags.csv"
    days = pd.date_range("2020-01-01", periods=10, freq="D").strftime("%Y-%m-%d")
    pd.DataFrame({"day": days, "y": np.arange(10.0), "holiday": np.arange(10) % 3 == 0}).to_csv(
        path, index=False
    )
    err = _fails(["forecast", path, "--target", "holiday", "-H", "2"], capsys)
    assert "'holiday' holds True/False values" in err and "--covariates" in err
    assert "astype" not in err


def test_mixed_date_formats_are_named_as_such(tmp_path, capsys):
    path = tmp_path / "footer.csv"
    days = [*pd.date_range("2020-01-01", periods=9, freq="D").strftime("%Y-%m-%d"), "Total"]
    pd.DataFrame({"day": days, "y": np.arange(10.0)}).to_csv(path, index=False)
    err = _fails(["forecast", path, "-H", "2"], capsys)
    assert "dates in mixed formats" in err and "row 10, 'Total', is not a date" in err
    assert "does not hold dates" not in err


def test_list_datasets(capsys):
    code, out, _ = _run(["forecast", "--list-datasets"], capsys)
    assert code == 0
    names = [line.split()[0] for line in out.splitlines()]
    assert {"air_passengers", "sunspots", "us_change"} <= set(names)


# ---------------------------------------------------------------------------- end to end
# These fit a real RNNForecaster (tiny and for 2 epochs).


def test_forecast_csv_plot_and_saved_model(series_csv, tmp_path, capsys):
    out_csv, png, saved = tmp_path / "fc.csv", tmp_path / "fc.png", tmp_path / "m.joblib"
    argv = ["forecast", series_csv, "--target", "sales", "-H", "5", *FAST]
    code, out, err = _run([*argv, "-o", out_csv, "--plot", png, "--save-model", saved], capsys)
    assert code == 0
    assert out == ""  # the forecast went to the file
    assert "epochs" in err and "forecast 5 steps" in err

    forecast = pd.read_csv(out_csv, index_col=0, parse_dates=True)
    assert list(forecast.columns) == ["sales"]
    expected = pd.date_range("2004-01-01", periods=5, freq="MS")
    assert list(forecast.index) == list(expected)
    assert np.isfinite(forecast["sales"]).all()

    assert png.read_bytes()[:8] == PNG_MAGIC
    assert png.stat().st_size > 5_000

    # The saved model forecasts the same numbers without refitting, printed to stdout.
    code, out, err = _run(["forecast", "--load-model", saved, "-H", "5"], capsys)
    assert code == 0
    assert "loaded" in err
    assert out == out_csv.read_text()

    # Same command, same seed: the same forecast.
    code, out_again, _ = _run(argv, capsys)
    assert out_again == out_csv.read_text()


def test_forecast_two_targets_to_stdout(series_csv, tmp_path, capsys):
    png = tmp_path / "two.png"
    code, out, err = _run(["forecast", series_csv, "-H", "3", "--plot", png, *FAST], capsys)
    assert code == 0
    assert "ignoring non-numeric column(s) ['region']" in err
    lines = out.strip().splitlines()
    assert lines[0] == "month,sales,returns"
    assert len(lines) == 4
    assert png.read_bytes()[:8] == PNG_MAGIC


def _promo_history(tmp_path, n, ahead):
    """A weekly history with a promotion covariate, written to ``h.csv``, and the future rows
    of the covariate (a frame) with their stamps."""
    index = pd.date_range("2020-01-06", periods=n, freq="W-MON")
    promo = (np.arange(n + ahead) % 4 == 0).astype(float)
    history = pd.DataFrame(
        {"week": index.strftime("%Y-%m-%d"), "sales": 10 + 5 * promo[:n], "promo": promo[:n]}
    )
    future_index = pd.date_range(index[-1], periods=ahead + 1, freq="W-MON")[1:]
    future = pd.DataFrame({"week": future_index.strftime("%Y-%m-%d"), "promo": promo[n:]})
    history.to_csv(tmp_path / "h.csv", index=False)
    return future, future_index


def test_forecast_with_covariates_from_future_file(tmp_path, capsys):
    future, future_index = _promo_history(tmp_path, 40, 4)
    future.to_csv(tmp_path / "f.csv", index=False)
    argv = ["forecast", tmp_path / "h.csv", "--target", "sales", "--covariates", "promo"]
    code, out, _ = _run([*argv, "--future", tmp_path / "f.csv", *FAST], capsys)
    assert code == 0
    forecast = pd.read_csv(pd.io.common.StringIO(out), index_col=0, parse_dates=True)
    assert list(forecast.index) == list(future_index)
    assert list(forecast.columns) == ["sales"]


def _stdin(monkeypatch, data):
    """Standard input holding ``data`` (bytes), as a shell redirection gives it."""
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data)))


def test_dash_reads_the_data_from_stdin_and_writes_the_forecast_to_stdout(
    series_csv, tmp_path, monkeypatch, capsys
):
    argv = ["--target", "sales", "-H", "3", *FAST]
    code, from_file, _ = _run(["forecast", series_csv, *argv], capsys)
    assert code == 0
    monkeypatch.chdir(tmp_path)
    _stdin(monkeypatch, series_csv.read_bytes())
    code, from_stdin, err = _run(["forecast", "-", *argv, "-o", "-"], capsys)
    assert code == 0
    assert from_stdin == from_file  # same data, same seed: the same forecast, on stdout
    assert not (tmp_path / "-").exists()  # '-o -' is stdout, not a file named '-'
    assert "fitted on <stdin>" in err and "wrote" not in err


def test_covariates_future_from_stdin(tmp_path, monkeypatch, capsys):
    future, future_index = _promo_history(tmp_path, 24, 3)
    _stdin(monkeypatch, future.to_csv(index=False).encode())
    argv = ["forecast", tmp_path / "h.csv", "--target", "sales", "--covariates", "promo"]
    code, out, _ = _run([*argv, "--future", "-", *FAST], capsys)
    assert code == 0
    forecast = pd.read_csv(io.StringIO(out), index_col=0, parse_dates=True)
    assert list(forecast.index) == list(future_index)


@pytest.mark.parametrize("suffix", [".gz", ".bz2", ".xz", ".zip", ".tar.gz"])
def test_compressed_files_are_read_as_pandas_reads_them(series_csv, tmp_path, suffix, capsys):
    """Reading each file once, as bytes, lost pandas' decompression by the file's name: a
    .csv.gz was refused as "not UTF-8 text"."""
    import bz2
    import gzip
    import lzma
    import zipfile

    packed = tmp_path / f"sales.csv{suffix}"
    data = series_csv.read_bytes()
    if suffix == ".zip":
        with zipfile.ZipFile(packed, "w") as archive:
            archive.writestr("sales.csv", data)
    elif suffix == ".tar.gz":
        import tarfile

        with tarfile.open(packed, "w:gz") as archive:
            archive.add(series_csv, arcname="sales.csv")
    else:
        packed.write_bytes({".gz": gzip, ".bz2": bz2, ".xz": lzma}[suffix].compress(data))
    argv = ["--target", "sales", "-H", "3", *FAST]
    code, from_packed, _ = _run(["forecast", packed, *argv], capsys)
    assert code == 0
    assert from_packed == _run(["forecast", series_csv, *argv], capsys)[1]


def test_a_corrupt_archive_is_an_error_not_a_traceback(tmp_path, capsys):
    bad = tmp_path / "bad.csv.xz"
    bad.write_bytes(b"not xz data at all")
    assert "cannot read" in _fails(["forecast", bad, "-H", "2"], capsys)


def test_a_named_pipe_is_read_as_a_file(series_csv, tmp_path, capsys):
    """Process substitution (``<(zcat data.csv.gz)``) and /dev/stdin are pipes, not regular
    files; they can be read once, and they were refused as "no such file"."""
    import threading

    fifo = tmp_path / "pipe.csv"
    os.mkfifo(fifo)
    writer = threading.Thread(target=lambda: fifo.write_bytes(series_csv.read_bytes()))
    writer.start()
    argv = ["--target", "sales", "-H", "3", *FAST]
    code, from_pipe, _ = _run(["forecast", fifo, *argv], capsys)
    writer.join(timeout=60)
    assert code == 0
    code, from_file, _ = _run(["forecast", series_csv, *argv], capsys)
    assert from_pipe == from_file


def test_stdin_for_both_data_and_future_is_refused(capsys):
    err = _fails(["forecast", "-", "--covariates", "x", "--future", "-"], capsys)
    assert "cannot both be read from standard input" in err


def test_a_folder_is_not_a_csv_file(tmp_path, capsys):
    err = _fails(["forecast", tmp_path, "-H", "3"], capsys)
    assert "is a folder, not a CSV file" in err


def test_errors_in_stdin_data_name_stdin(monkeypatch, capsys):
    _stdin(monkeypatch, b"day,y\n2021-01-01,1\n,2\n2021-01-03,3\n")
    err = _fails(["forecast", "-", "-H", "2"], capsys)
    assert "time column 'day' of '<stdin>' is empty in row 2" in err


def test_forecast_bundled_dataset(tmp_path, capsys):
    code, out, err = _run(
        ["forecast", "--dataset", "air_passengers", "-H", "4", *FAST],
        capsys,
    )
    assert code == 0
    lines = out.strip().splitlines()
    assert lines[0] == "month,passengers"
    assert [line.split(",")[0] for line in lines[1:]] == [
        "1961-01-01",
        "1961-02-01",
        "1961-03-01",
        "1961-04-01",
    ]
    assert "air_passengers" in err


def test_console_script_is_declared():
    from importlib.metadata import entry_points

    scripts = {ep.name: ep.value for ep in entry_points(group="console_scripts")}
    assert scripts.get("tsrnn") == "tsrnn.cli:main"
    assert os.path.exists(os.path.join(os.path.dirname(sys.executable), "tsrnn"))


def test_output_folders_are_checked_before_the_fit(tmp_path, capsys):
    missing = tmp_path / "no" / "such"
    for option, name in (("-o", "f.csv"), ("--plot", "f.png"), ("--save-model", "m.joblib")):
        err = _fails(
            ["forecast", "--dataset", "air_passengers", "-H", "2", option, missing / name], capsys
        )
        assert "there is no folder" in err


def test_no_output_is_written_over_another_output_or_an_input(series_csv, tmp_path, capsys):
    """A forecast written over the model just saved (or over the loaded model), and a model
    saved over the data file, were silent: exit 0, the file lost."""
    data = series_csv.read_bytes()
    saved = tmp_path / "m.joblib"
    base = ["forecast", series_csv, "-H", "2", *FAST]
    err = _fails([*base, "--save-model", saved, "-o", saved], capsys)
    assert "--output and --save-model name the same file" in err
    assert not saved.exists()
    err = _fails([*base, "--save-model", series_csv], capsys)
    assert "--save-model and the data file name the same file" in err
    assert series_csv.read_bytes() == data
    assert _run([*base, "--save-model", saved], capsys)[0] == 0
    model = saved.read_bytes()
    link = tmp_path / "link.joblib"
    link.symlink_to(saved)
    err = _fails(["forecast", "--load-model", saved, "-H", "2", "-o", link], capsys)
    assert "--output and --load-model name the same file" in err
    assert saved.read_bytes() == model
    err = _fails([*base, "--plot", tmp_path / "a.png", "--save-model", tmp_path / "a.png"], capsys)
    assert "--plot and --save-model name the same file" in err


def test_a_failed_write_to_stdout_is_an_error_not_a_traceback(tmp_path):
    if not os.path.exists("/dev/full"):
        pytest.skip("needs /dev/full (Linux) to fail a write")
    with open("/dev/full", "w") as full:
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "tsrnn",
                "forecast",
                "--dataset",
                "air_passengers",
                "-H",
                "2",
                "-q",
                *FAST,
            ],
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
            timeout=600,
        )
    assert done.returncode == 2, done.stderr[-2000:]
    assert "cannot write the forecast to standard output" in done.stderr
    assert "Traceback" not in done.stderr


def test_numba_disabled_runs_the_torch_reference():
    code = """
import warnings, torch, tsrnn, tsrnn.nn
from tsrnn.kernels.common.registry import BackendUnavailableError, resolve_backend
assert resolve_backend("auto", "cpu", "float32") == "torch"
try:
    resolve_backend("numba", "cpu", "float32")
except BackendUnavailableError as e:
    assert "NUMBA_DISABLE_JIT" in str(e)
else:
    raise AssertionError("numba backend accepted with the JIT disabled")
ref = torch.nn.GRU(2, 3)
gru = tsrnn.nn.GRU(2, 3)
gru.load_state_dict(ref.state_dict())
x = torch.randn(4, 2, 2)
torch.testing.assert_close(gru(x)[0], ref(x)[0])
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    assert tsrnn.warmup() == 0.0
assert any("NUMBA_DISABLE_JIT" in str(w.message) for w in caught)
print("ok")
"""
    env = dict(os.environ, NUMBA_DISABLE_JIT="1")
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-2000:]


def test_file_without_time_column_with_covariates_names_the_step_column(tmp_path, capsys):
    history, future = tmp_path / "history.csv", tmp_path / "future.csv"
    t = np.arange(40.0)
    pd.DataFrame({"sales": t % 5 + t / 10, "promo": t % 3}).to_csv(history, index=False)
    pd.DataFrame({"promo": [0.0, 1.0, 2.0]}).to_csv(future, index=False)
    argv = ["forecast", history, "--no-time-col", "--target", "sales", "--covariates", "promo"]
    code, out, _ = _run([*argv, "--future", future, *FAST], capsys)
    assert code == 0
    lines = out.splitlines()
    assert lines[0] == "step,sales"  # named, not blank, as without covariates
    assert [line.split(",")[0] for line in lines[1:]] == ["40", "41", "42"]


def test_a_loaded_model_without_time_column_numbers_future_rows_from_its_own_end(
    tmp_path, capsys
):
    """The CSV beside --load-model is only drawn as history: --future's rows were numbered
    from its length, and a 30-row CSV beside a model of 40 rows was refused as 'not after
    the end of the data'."""
    history, future, saved = tmp_path / "h.csv", tmp_path / "f.csv", tmp_path / "m.joblib"
    t = np.arange(40.0)
    pd.DataFrame({"sales": t % 5 + t / 10, "promo": t % 3}).to_csv(history, index=False)
    pd.DataFrame({"promo": [0.0, 1.0]}).to_csv(future, index=False)
    argv = ["forecast", history, "--no-time-col", "--target", "sales", "--covariates", "promo"]
    code, fitted, _ = _run([*argv, "--future", future, *FAST, "--save-model", saved], capsys)
    assert code == 0
    short = tmp_path / "short.csv"
    pd.read_csv(history).iloc[:30].to_csv(short, index=False)
    for data in ([], [short, "--no-time-col"], [history, "--no-time-col"]):
        code, out, _ = _run(
            ["forecast", *data, "--load-model", saved, "--future", future, "--no-time-col"],
            capsys,
        )
        assert code == 0
        assert out == fitted


def test_a_dated_loaded_model_takes_future_rows_without_stamps_but_no_undated_history(
    tmp_path, capsys
):
    """--no-time-col beside a model fitted on dates: the future rows continue the model's
    data; a history CSV without dates cannot be placed before the forecast (it failed with
    Python's TypeError comparing an int with a Timestamp)."""
    history, saved = tmp_path / "h.csv", tmp_path / "m.joblib"
    t = np.arange(40.0)
    dates = pd.date_range("2020-01-01", periods=40, freq="D").strftime("%Y-%m-%d")
    frame = pd.DataFrame({"date": dates, "sales": t % 5 + t / 10, "promo": t % 3})
    frame.to_csv(history, index=False)
    future = tmp_path / "f.csv"
    pd.DataFrame({"date": ["2020-02-10", "2020-02-11"], "promo": [0.0, 1.0]}).to_csv(
        future, index=False
    )
    argv = ["forecast", history, "--target", "sales", "--covariates", "promo", *FAST]
    code, fitted, _ = _run([*argv, "--future", future, "--save-model", saved], capsys)
    assert code == 0
    bare = tmp_path / "bare.csv"
    pd.DataFrame({"promo": [0.0, 1.0]}).to_csv(bare, index=False)
    code, out, _ = _run(
        ["forecast", "--load-model", saved, "--future", bare, "--no-time-col"], capsys
    )
    assert code == 0 and out == fitted
    undated = tmp_path / "undated.csv"
    frame.drop(columns="date").to_csv(undated, index=False)
    err = _fails(
        ["forecast", undated, "--load-model", saved, "--future", bare, "--no-time-col"], capsys
    )
    assert "fitted on dated data" in err


def test_load_model_with_save_model_is_refused_for_what_it_is(tmp_path, capsys):
    # the same path for both was refused as "the same file"; the fix (another name) then
    # met this refusal
    saved = tmp_path / "m.joblib"
    assert _run(["forecast", "--dataset", "air_passengers", "-H", "2", *FAST,
                 "--save-model", saved], capsys)[0] == 0
    err = _fails(["forecast", "--load-model", saved, "-H", "2", "--save-model", saved], capsys)
    assert "nothing to save" in err


def test_a_loaded_model_takes_future_rows_only_if_it_has_covariates(series_csv, tmp_path, capsys):
    """A target-only model took a --future file, ignored its columns and forecast at its
    stamps, skipping steps silently."""
    saved = tmp_path / "m.joblib"
    assert _run(["forecast", series_csv, "-H", "2", *FAST, "--save-model", saved], capsys)[0] == 0
    future = tmp_path / "future.csv"
    pd.DataFrame({"month": ["2004-02-01", "2004-03-01"], "promo": [1.0, 0.0]}).to_csv(
        future, index=False
    )
    err = _fails(["forecast", "--load-model", saved, "--future", future], capsys)
    assert "fitted without covariates" in err and "--horizon" in err


def test_load_model_refuses_what_is_not_a_fitted_forecaster_of_pandas_data(tmp_path, capsys):
    import joblib
    from sklearn.linear_model import LinearRegression

    from tsrnn import RNNForecaster

    y = np.sin(np.arange(40.0))
    panel_index = pd.MultiIndex.from_product(
        [["a", "b"], pd.date_range("2000", periods=40, freq="D")], names=["id", "time"]
    )
    cases = {
        "a LinearRegression, not a fitted tsrnn": LinearRegression().fit(y[:, None], y),
        "the class RNNForecaster, not a fitted": RNNForecaster,
        "never fitted": RNNForecaster(),
        "fitted on a NumPy array": RNNForecaster(hidden_size=4, max_epochs=1).fit(y),
        "covariates given as an array": RNNForecaster(hidden_size=4, max_epochs=1).fit(
            y[:, None], pd.Series(y, index=pd.date_range("2000", periods=40, freq="D"))
        ),
        "a panel model fitted with covariates": RNNForecaster(hidden_size=4, max_epochs=1).fit(
            pd.DataFrame({"promo": np.r_[y, y]}, index=panel_index),
            pd.Series(np.r_[y, y], index=panel_index),
        ),
    }
    for i, (message, obj) in enumerate(cases.items()):
        path = tmp_path / f"m{i}.joblib"
        joblib.dump(obj, path)
        for extra in ([], ["--n-threads", "1"]):
            err = _fails(["forecast", "--load-model", path, "-H", "2", *extra], capsys)
            assert message in err


def test_messages_speak_the_commands_options(tmp_path, capsys):
    index = pd.date_range("2015-01-01", periods=96, freq="MS")
    frame = pd.DataFrame({"date": index.strftime("%Y-%m-%d"), "sales": 100 + np.sin(np.arange(96))})
    path = tmp_path / "data.csv"
    frame.to_csv(path, index=False)
    # the estimator's fixes as options, not Python keywords
    err = _fails(["forecast", path, "--target", "sales", "-H", "2", "--window", "90"], capsys)
    assert "--window auto" in err and "--no-early-stopping" in err
    assert "window='auto'" not in err and "early_stopping=False" not in err
    # an infinite value named with its stamp, as a missing one is
    frame.loc[5, "sales"] = np.inf
    frame.to_csv(tmp_path / "inf.csv", index=False)
    err = _fails(["forecast", tmp_path / "inf.csv", "-H", "2", *FAST], capsys)
    assert "1 infinite value(s) (first at 2015-06-01)" in err
    # an output path that is a folder is refused before the fit
    (tmp_path / "out").mkdir()
    err = _fails(["forecast", path, "-H", "2", "-o", tmp_path / "out", *FAST], capsys)
    assert "is a folder: give a file name in it" in err


def test_future_stamps_off_the_historys_frequency_name_it(tmp_path, capsys):
    index = pd.date_range("2015-01-01", periods=96, freq="MS")
    frame = pd.DataFrame(
        {
            "date": index.strftime("%Y-%m-%d"),
            "sales": np.sin(np.arange(96)),
            "promo": np.arange(96) % 2,
        }
    )
    frame.to_csv(tmp_path / "data.csv", index=False)
    future = pd.DataFrame(
        {"date": pd.date_range("2023-01-01", periods=6, freq="MS").strftime("%Y-%m-%d"), "promo": 1}
    ).drop(index=3)
    future.to_csv(tmp_path / "future.csv", index=False)
    argv = ["forecast", tmp_path / "data.csv", "--target", "sales", "--covariates", "promo"]
    err = _fails([*argv, "--future", tmp_path / "future.csv", *FAST], capsys)
    assert "do not follow the frequency of the history, MS: row 4" in err
    assert "--freq" not in err  # none was given


@pytest.mark.parametrize(
    ("fmt", "order"), [("%Y-%m-%d", []), ("%d/%m/%Y", ["--date-order", "dmy"])], ids=["iso", "dmy"]
)
def test_hourly_stamps_that_write_midnight_as_a_bare_date(tmp_path, capsys, fmt, order):
    # as Excel and R export them: 2021-01-01, 2021-01-01 01:00, ... (were "not dates")
    index = pd.date_range("2021-01-01", periods=50, freq="h")
    stamps = [t.strftime(fmt if t.hour == 0 else fmt + " %H:%M") for t in index]
    path = tmp_path / "hourly.csv"
    pd.DataFrame({"ts": stamps, "load": np.sin(np.arange(50) / 4)}).to_csv(path, index=False)
    code, out, _ = _run(["forecast", path, "-H", "2", *order, *FAST], capsys)
    assert code == 0
    got = pd.read_csv(io.StringIO(out), index_col=0, parse_dates=True).index
    assert list(got) == list(pd.date_range("2021-01-03 02:00", periods=2, freq="h"))


def test_true_false_columns_are_left_out_of_the_targets_but_taken_as_covariates(tmp_path, capsys):
    index = pd.date_range("2020-01-06", periods=40, freq="W-MON")
    holiday = np.arange(43) % 4 == 0
    history = pd.DataFrame(
        {
            "week": index.strftime("%Y-%m-%d"),
            "sales": 10 + 5 * holiday[:40],
            "holiday": holiday[:40],
        }
    )
    ahead = pd.date_range(index[-1], periods=4, freq="W-MON")[1:]
    future = pd.DataFrame({"week": ahead.strftime("%Y-%m-%d"), "holiday": holiday[40:]})
    history.to_csv(tmp_path / "h.csv", index=False)
    future.to_csv(tmp_path / "f.csv", index=False)
    code, out, err = _run(["forecast", tmp_path / "h.csv", "-H", "2", "-q", *FAST], capsys)
    assert code == 0
    assert out.splitlines()[0] == "week,sales"
    assert "ignoring True/False column(s) ['holiday']" in err  # even with -q
    argv = ["forecast", tmp_path / "h.csv", "--covariates", "holiday"]
    code, out, _ = _run([*argv, "--future", tmp_path / "f.csv", *FAST], capsys)
    assert code == 0
    forecast = pd.read_csv(io.StringIO(out), index_col=0, parse_dates=True)
    assert list(forecast.index) == list(ahead) and list(forecast.columns) == ["sales"]


def test_quiet_still_notes_a_dropped_column_and_spots_decimal_commas(tmp_path, capsys):
    # -q hides the summary only: a forecast that lacks a column must still say so
    t = np.arange(30)
    path = tmp_path / "comma.csv"
    pd.DataFrame(
        {
            "day": pd.date_range("2020-01-01", periods=30, freq="D").strftime("%Y-%m-%d"),
            "sales": [f"{100 + i},{i % 10}" for i in t],
            "promo": (t % 3).astype(float),
        }
    ).to_csv(path, index=False)
    code, out, err = _run(["forecast", path, "-H", "2", "-q", *FAST], capsys)
    assert code == 0
    assert out.splitlines()[0] == "day,promo"
    assert "ignoring column 'sales'" in err and "decimal comma (e.g. '100,0')" in err
    assert "decimal=','" in err
    assert "fitted on" not in err  # the summary line stays hidden
    err = _fails(["forecast", path, "--target", "sales", "-H", "2"], capsys)
    assert "decimal comma" in err


def _day_csv(path, **columns):
    days = pd.date_range("2020-01-01", periods=30, freq="D").strftime("%Y-%m-%d")
    pd.DataFrame({"day": days, **columns}).to_csv(path, index=False)
    return path


def test_thousands_separators_are_not_called_decimal_commas(tmp_path, capsys):
    """'1,500' was called a decimal comma, and the advice (decimal=',') read it as 1.5: the
    forecast would run on data 1000 times too small."""
    t = np.arange(30)
    sure = _day_csv(tmp_path / "sure.csv", sales=[f"{1 + i % 3},{500 + i}.5" for i in t])
    either = _day_csv(tmp_path / "either.csv", sales=[f"{1 + i % 3},{500 + i}" for i in t])
    err = _fails(["forecast", sure, "--target", "sales", "-H", "2"], capsys)
    assert "thousands separators (e.g. '1,500.5')" in err and "thousands=','" in err
    assert "decimal=" not in err
    err = _fails(["forecast", either, "--target", "sales", "-H", "2"], capsys)
    assert "may separate thousands (1500) or be decimal commas (1.5)" in err
    assert "thousands=','" in err and "decimal=','" in err


def test_an_empty_column_is_not_a_default_target(tmp_path, capsys):
    """A trailing comma on every line makes a column of NaN, which was taken as a target and
    failed the run ("40 missing values")."""
    t = np.arange(30.0)
    path = _day_csv(tmp_path / "trailing.csv", sales=10 + t % 7, notes=np.full(30, np.nan))
    code, out, err = _run(["forecast", path, "-H", "2", *FAST], capsys)
    assert code == 0 and out.splitlines()[0] == "day,sales"
    assert "ignoring empty column(s) ['notes']" in err


def test_a_placeholder_in_a_numeric_column_is_named(tmp_path, capsys):
    """One '-' makes the column text; the message showed its first value ('10.0'), a number."""
    values = [str(10.0 + i % 7) for i in range(30)]
    values[25] = "-"
    path = _day_csv(tmp_path / "dash.csv", sales=values)
    err = _fails(["forecast", path, "--target", "sales", "-H", "2"], capsys)
    assert "it holds '-' at 2020-01-26" in err


def test_a_time_column_of_fractions_names_the_first_fraction(tmp_path, capsys):
    # the message showed NumPy's repr of the first value (np.float64(1.0)), a whole number
    path = tmp_path / "steps.csv"
    pd.DataFrame({"t": [1.0, 2.0, 2.5, 4.0] * 6, "v": np.arange(24.0)}).to_csv(path, index=False)
    err = _fails(["forecast", path, "--time-col", "t", "-H", "2", *FAST], capsys)
    assert "not whole (2.5, ...)" in err


def test_an_unnamed_time_column_stays_unnamed_in_the_forecast(tmp_path, capsys):
    # pandas' to_csv of a dated Series writes the dates under an empty header; the forecast
    # was written under pandas' placeholder name 'Unnamed: 0'
    index = pd.date_range("2021-01-01", periods=40, freq="D", name=None)
    path = tmp_path / "indexed.csv"
    pd.Series(np.arange(40.0), index=index, name="sales").to_csv(path)
    out = tmp_path / "forecast.csv"
    code, _, _ = _run(["forecast", path, "-H", 2, *FAST, "-o", out], capsys)
    assert code == 0
    assert out.read_text().splitlines()[0] == ",sales"
    forecast = pd.read_csv(out, index_col=0, parse_dates=True)
    assert list(forecast.index) == list(pd.date_range("2021-02-10", periods=2, freq="D"))
    # a header that really is named 'Unnamed: 0' keeps its name
    named = tmp_path / "named.csv"
    named.write_text(path.read_text().replace(",sales", "Unnamed: 0,sales", 1))
    code, _, _ = _run(["forecast", named, "-H", 2, *FAST, "-o", out], capsys)
    assert code == 0
    assert out.read_text().splitlines()[0] == "Unnamed: 0,sales"


def test_window_below_two_is_refused_with_the_range(series_csv, capsys):
    # --window 0 was told ">= 1", then --window 1 was refused by the estimator for [2, inf)
    for bad in ("0", "1"):
        err = _fails(["forecast", series_csv, "-H", 2, "--window", bad], capsys)
        assert "expected 'auto' or a whole number >= 2" in err


# ---------------------------------------------------------------------------- review 28


def _steps_csv(path, n=40):
    t = np.arange(n)
    pd.DataFrame({"t": t, "sales": t % 5 + t / 10}).to_csv(path, index=False)
    return path


def _days_csv(path, n=40, tz=None):
    index = pd.date_range("2020-01-01", periods=n, freq="D", tz=tz)
    stamps = [s.isoformat() for s in index] if tz else index.strftime("%Y-%m-%d")
    pd.DataFrame({"date": stamps, "sales": np.arange(n) % 5 + 1.0}).to_csv(path, index=False)
    return path


def _panel_csv(path, n=30):
    """Two monthly series in long layout (id, time, value), as tsrnn writes a panel; 'b'
    starts later."""
    rows = []
    for key, start in (("a", "2010-01-01"), ("b", "2010-04-01")):
        index = pd.date_range(start, periods=n, freq="MS")
        rows.append(
            pd.DataFrame(
                {"shop": key, "month": index.strftime("%Y-%m-%d"), "sales": np.arange(n) % 4}
            )
        )
    pd.concat(rows).to_csv(path, index=False)
    return path


def test_a_loaded_model_refuses_data_on_another_time_axis(tmp_path, capsys):
    """The data beside --load-model (drawn as history, compared with the forecast's start)
    was compared with stamps of another kind: Python's TypeError, exit 1, after the forecast
    CSV was written."""
    steps, days = _steps_csv(tmp_path / "steps.csv"), _days_csv(tmp_path / "days.csv")
    zoned = _days_csv(tmp_path / "zoned.csv", tz="UTC")
    panel = _panel_csv(tmp_path / "panel.csv")
    models = {}
    for name, data in (("steps", [steps]), ("days", [days]),
                       ("panel", [panel, "--id-col", "shop", "--time-col", "month"])):
        models[name] = tmp_path / f"{name}.joblib"
        argv = ["forecast", *data, "-H", "2", *FAST, "--save-model", models[name]]
        assert _run(argv, capsys)[0] == 0
    out = tmp_path / "fc.csv"
    cases = [
        ("steps", [days], "fitted on one series stamped with whole numbers counting steps; "
                          "'days.csv' holds one series stamped with dates"),
        ("steps", [days, "--plot", tmp_path / "p.png"], "'days.csv' holds one series"),
        ("days", [steps], "'steps.csv' holds one series stamped with whole numbers"),
        ("days", [zoned], "without time zone; 'zoned.csv' holds one series stamped with dates "
                          "in time zone UTC"),
        ("panel", [days], "fitted on a panel of series, one per 'shop'"),
        ("days", [panel, "--id-col", "shop", "--time-col", "month"], "holds a panel of series"),
    ]
    for model, data, message in cases:
        err = _fails(["forecast", *data, "--load-model", models[model], "-H", "2", "-o", out],
                     capsys)
        assert message in err and "leave the data out" in err
        assert not out.exists()
    # data like the model's is still drawn as history
    code, _, _ = _run(["forecast", days, "--load-model", models["days"], "-H", "2",
                       "--plot", tmp_path / "ok.png"], capsys)
    assert code == 0 and (tmp_path / "ok.png").read_bytes().startswith(PNG_MAGIC)


def test_comparing_stamps_of_other_kinds_cannot_fail():
    """The second guard: the note on data running past the model's end, and the plot's join,
    compare stamps only where they can be compared."""
    from tsrnn.cli import _later, _warn_if_data_runs_past

    day = pd.Timestamp("2020-01-05")
    assert _later(day, 3) is None
    assert _later(day, day.tz_localize("UTC")) is None
    assert _later(pd.Period("2020-02", freq="M"), day) is True
    history = pd.DataFrame({"y": [1.0, 2.0]}, index=pd.RangeIndex(2))
    _warn_if_data_runs_past(history, pd.Series([1.0], index=pd.DatetimeIndex([day])))


def test_daily_stamps_whose_offsets_change_at_dst_are_read_in_local_time(
    tmp_path, capsys, monkeypatch
):
    """A zone-aware daily series written by pandas (+01:00, then +02:00 from 28 March) was
    read in UTC, where its days are 23 or 25 hours apart, and refused as irregular with
    advice to fill missing stamps (none is missing); RNNForecaster takes the same series."""
    index = pd.date_range("2021-03-01", periods=60, freq="D", tz="Europe/Berlin")
    path = tmp_path / "load.csv"
    load = np.sin(np.arange(60) / 3) + 5
    pd.Series(load, index=index, name="load").rename_axis("day").to_csv(path)
    expected = list(pd.date_range(index[-1], periods=3, freq="D")[1:])
    for extra in ([], ["--freq", "D"]):
        code, out, _ = _run(["forecast", path, "-H", "2", *FAST, *extra], capsys)
        assert code == 0
        assert out.splitlines()[1].startswith("2021-04-30 00:00:00+02:00,")
        forecast = pd.read_csv(io.StringIO(out), index_col=0, parse_dates=True)
        assert list(forecast.index) == expected
    # without a time zone database to find the zone in, the message names the cause
    import zoneinfo

    import tsrnn.cli

    monkeypatch.setattr(zoneinfo, "available_timezones", lambda: set())
    tsrnn.cli._ranked_zones.cache_clear()  # the database is read once a process
    monkeypatch.setattr(tsrnn.cli, "_ranked_zones", tsrnn.cli._ranked_zones.__wrapped__)
    err = _fails(["forecast", path, "-H", "2", *FAST], capsys)
    assert "UTC offsets change" in err and "daylight-saving" in err
    assert "fill in the missing stamps" not in err and "Write the stamps in UTC" in err


def test_an_infinite_future_covariate_is_refused_before_fitting(tmp_path, capsys, monkeypatch):
    import tsrnn

    future, _ = _promo_history(tmp_path, 40, 3)
    future.loc[1, "promo"] = np.inf
    future.to_csv(tmp_path / "f.csv", index=False)

    def no_fit(*args, **kwargs):
        raise AssertionError("the model was fitted before --future was checked")

    monkeypatch.setattr(tsrnn.RNNForecaster, "fit", no_fit)
    argv = ["forecast", tmp_path / "h.csv", "--target", "sales", "--covariates", "promo"]
    err = _fails([*argv, "--future", tmp_path / "f.csv", *FAST], capsys)
    assert "f.csv" in err and "column 'promo' has 1 infinite value(s)" in err
    assert f"first at {future.loc[1, 'week']}" in err


def test_a_panel_in_long_layout_is_read_with_id_col(tmp_path, capsys):
    """The layout tsrnn writes a panel's forecast in was refused as duplicated stamps, with
    advice to aggregate them (summing the series into one)."""
    path = _panel_csv(tmp_path / "panel.csv")
    code, out, err = _run(
        ["forecast", path, "--id-col", "shop", "--time-col", "month", "-H", "2", *FAST], capsys
    )
    assert code == 0
    assert out.splitlines() [0] == "shop,month,sales"
    forecast = pd.read_csv(io.StringIO(out))
    assert list(forecast["shop"]) == ["a", "a", "b", "b"]
    assert list(forecast["month"]) == ["2012-07-01", "2012-08-01", "2012-10-01", "2012-11-01"]
    assert "2 series" in err
    for data in ([path], [path, "--time-col", "month"]):
        err = _fails(["forecast", *data, "-H", "2", *FAST], capsys)
        assert "looks like a panel in long layout, one series per 'shop'" in err
        assert "--id-col shop" in err and "aggregate" not in err
    # with --id-col the time column is the first other one: month here, named only elsewhere
    err = _fails(["forecast", path, "-H", "2"], capsys)
    assert "read it as one with --id-col shop, which" in err
    moved = tmp_path / "moved.csv"
    pd.read_csv(path)[["shop", "sales", "month"]].to_csv(moved, index=False)
    assert "--id-col shop --time-col month" in _fails(["forecast", moved, "-H", "2"], capsys)
    refusals = {
        "give the file": ["--dataset", "air_passengers", "--id-col", "shop"],
        "needs a time column": [path, "--id-col", "shop", "--no-time-col"],
        "fit a panel with covariates in Python": [
            path, "--id-col", "shop", "--covariates", "sales", "--future", path,
        ],
        "no column 'store' (--id-col)": [path, "--id-col", "store", "--time-col", "month"],
    }
    for message, argv in refusals.items():
        assert message in _fails(["forecast", *argv, "-H", "2"], capsys)
    # --id-col alone: the time column is the first column other than the ids (it was refused
    # as "the time column too", the first column by default)
    code, alone, _ = _run(["forecast", path, "--id-col", "shop", "-H", "2", *FAST], capsys)
    assert code == 0 and alone == out


def test_dated_future_rows_after_step_numbers_are_refused_in_the_commands_terms(
    tmp_path, capsys
):
    """History counting steps, --future with dates: "too few stamps: pass --freq", which
    was then refused, or Python's "X has a datetime index ... a plain array"."""
    t = np.arange(8)
    pd.DataFrame({"t": t, "sales": t + 1.0, "x": t % 2}).to_csv(tmp_path / "h.csv", index=False)
    argv = ["forecast", tmp_path / "h.csv", "--target", "sales", "--covariates", "x", *FAST]
    for n in (2, 3):
        days = pd.date_range("2020-01-01", periods=n, freq="D").strftime("%Y-%m-%d")
        pd.DataFrame({"t": days, "x": 1}).to_csv(tmp_path / "f.csv", index=False)
        err = _fails([*argv, "--future", tmp_path / "f.csv"], capsys)
        assert "the history's time column counts steps as whole numbers" in err
        assert "(8, 9, ...)" in err
        assert "--freq" not in err and "X has" not in err


def test_an_output_path_ending_in_a_separator_is_refused_before_the_fit(tmp_path, capsys):
    data = _steps_csv(tmp_path / "steps.csv")
    for option, example in (("-o", "forecast.csv"), ("--save-model", "model.joblib")):
        folder = str(tmp_path / "nodir") + os.sep
        err = _fails(["forecast", data, "-H", "2", *FAST, option, folder], capsys)
        assert "names a folder: give a file name" in err and example in err
    assert not (tmp_path / "nodir").exists()


def test_a_one_column_file_suggests_no_time_col(tmp_path, capsys):
    path = tmp_path / "one.csv"
    pd.DataFrame({"sales": np.arange(1.0, 9.0)}).to_csv(path, index=False)
    for extra in ([], ["--target", "sales"]):
        err = _fails(["forecast", path, "-H", "2", *extra], capsys)
        assert "the only column of" in err and "'sales', was taken as the time column" in err
        assert "use --no-time-col" in err


def test_too_short_message_names_model_horizon(tmp_path, capsys):
    from tsrnn.cli import _as_cli_options

    path = tmp_path / "short.csv"
    pd.DataFrame({"t": np.arange(10), "sales": np.arange(10.0)}).to_csv(path, index=False)
    argv = ["forecast", path, "-H", "2", "--max-epochs", "1", "--model-horizon", "8"]
    err = _fails([*argv, "--strategy", "direct"], capsys)
    assert "a smaller --model-horizon" in err and "a smaller horizon" not in err
    assert "multiple of --model-horizon (6 rows" in _as_cli_options(
        "Pass X up to a multiple of horizon (6 rows here)"
    )


def test_other_warnings_are_shown_once_even_with_an_always_filter():
    """A RuntimeWarning from the fit was shown while still recorded, so it was appended to
    the list being shown: with the filter "always" (as under pytest) it never ended."""
    import threading
    import warnings

    from tsrnn.cli import _warnings_as_notes

    shown = []

    def emit():
        with warnings.catch_warnings(record=True) as outer:
            warnings.simplefilter("always")
            with _warnings_as_notes():
                warnings.warn("invalid value", RuntimeWarning, stacklevel=1)
            shown.extend(outer[:5])

    worker = threading.Thread(target=emit, daemon=True)
    worker.start()
    worker.join(timeout=5)
    assert not worker.is_alive(), "the warning was shown again and again"
    assert [str(w.message) for w in shown] == ["invalid value"]


def test_a_panel_with_whole_number_ids_is_named_by_its_ids(tmp_path, capsys):
    """Integer store ids beside text dates: the hint named the dates as the ids (text that
    reads as dates was taken for ids, whole numbers never), and the command it gave fitted
    one series per month, with store numbers for time, without an error."""
    months = pd.date_range("2010-01-01", periods=30, freq="MS").strftime("%Y-%m-%d")
    rows = [
        pd.DataFrame({"store": k, "month": months, "sales": np.arange(30.0) % 4 + k})
        for k in range(1, 9)
    ]
    path = tmp_path / "stores.csv"
    pd.concat(rows).to_csv(path, index=False)
    err = _fails(["forecast", path, "-H", "2", *FAST], capsys)
    assert "one series per 'store'" in err and "read it as one with --id-col store," in err
    code, out, err = _run(["forecast", path, "--id-col", "store", "-H", "2", *FAST], capsys)
    assert code == 0 and "8 series" in err
    forecast = pd.read_csv(io.StringIO(out))
    assert list(forecast.columns) == ["store", "month", "sales"]
    assert set(forecast["month"]) == {"2012-07-01", "2012-08-01"}


def test_a_panel_written_with_each_series_index_reads_its_dates(tmp_path, capsys):
    """Per-series frames concatenated and written with their index (pandas' default): the
    unnamed column numbers each series' rows from 0. It was offered as the time stamps, and
    --id-col read it so, dropping the dates ("ignoring non-numeric column(s) ['month']")."""
    path = _panel_csv(tmp_path / "panel.csv")
    flat = pd.read_csv(path)
    indexed = tmp_path / "indexed.csv"
    pd.concat([part.reset_index(drop=True) for _, part in flat.groupby("shop")]).to_csv(indexed)
    assert pd.read_csv(indexed).columns[0] == "Unnamed: 0"
    err = _fails(["forecast", indexed, "-H", "2", *FAST], capsys)
    assert "the stamps of 'month' repeat once per shop" in err and "Unnamed" not in err
    code, out, err = _run(["forecast", indexed, "--id-col", "shop", "-H", "2", *FAST], capsys)
    assert code == 0 and "ignoring the unnamed first column" in err
    _, expected, _ = _run(["forecast", path, "--id-col", "shop", "-H", "2", *FAST], capsys)
    assert out == expected


def test_the_summary_counts_each_series_steps(tmp_path, capsys):
    """Series that end at different times: "forecast 3 steps for each of 2 series" for -H 2
    (the stamps of all the series counted)."""
    path = _panel_csv(tmp_path / "panel.csv")
    code, _, err = _run(["forecast", path, "--id-col", "shop", "-H", "2", *FAST], capsys)
    assert code == 0
    assert "forecast 2 steps for each of 2 series, 2012-07-01 to 2012-11-01" in err


def test_a_panel_s_time_column_errors_do_not_offer_no_time_col(tmp_path, capsys):
    """--id-col refuses --no-time-col ("needs a time column"), yet the time column's errors
    in a panel ended in "or use --no-time-col"."""
    flat = pd.read_csv(_panel_csv(tmp_path / "panel.csv"))
    for name, values in {"note": "x", "share": 0.5}.items():
        path = tmp_path / f"{name}.csv"
        flat.insert(1, name, values)
        flat.to_csv(path, index=False)
        err = _fails(["forecast", path, "--id-col", "shop", "-H", "2", *FAST], capsys)
        assert f"time column '{name}'" in err and "--time-col" in err, err
        assert "--no-time-col" not in err, err
        flat = flat.drop(columns=name)


def test_a_file_without_a_header_row_is_refused(tmp_path, capsys):
    """pandas took the first data row for the column names: the fit ran one observation
    short, with no note, and the output was headed by those values."""
    rows = "".join(f"2020-01-{d:02d},{10 + d}.00,{20 + d}.50\n" for d in range(1, 31))
    path = tmp_path / "no_header.csv"
    path.write_text(rows)
    err = _fails(["forecast", path, "-H", "2"], capsys)
    assert "seems to have no header row: its first line, '2020-01-01,11.00,21.50'" in err
    values = tmp_path / "values.csv"
    values.write_text("".join(f"{v}.5\n" for v in range(30)))
    err = _fails(["forecast", values, "--no-time-col", "-H", "2"], capsys)
    assert "seems to have no header row" in err
    # column names that are years are names
    years = tmp_path / "years.csv"
    years.write_text("date,2019,2020\n" + "".join(
        f"2020-01-{d:02d},{d}.0,{2 * d}.0\n" for d in range(1, 31)))
    code, out, _ = _run(["forecast", years, "-H", "2", "--max-epochs", "1",
                         "--hidden-size", "2"], capsys)
    assert code == 0 and out.splitlines()[0] == "date,2019,2020"


def test_a_column_left_out_for_a_few_odd_values_names_them(tmp_path, capsys):
    """One '-' among numbers dropped the column with "ignoring non-numeric column(s)"; with
    one column the error then advised --target, which is refused for the same reason."""
    lines = [f"2020-01-{d:02d},{10 + d % 7}.0,{d}.0" for d in range(1, 31)]
    lines[14] = "2020-01-15,-,15.0"
    path = tmp_path / "dash.csv"
    path.write_text("date,sales,visits\n" + "\n".join(lines) + "\n")
    code, _, err = _run(["forecast", path, "-H", "2", "--max-epochs", "1",
                         "--hidden-size", "2"], capsys)
    assert code == 0
    assert ("ignoring column 'sales': it holds numbers, and 1 value(s) that are not, first "
            "'-' at 2020-01-15") in err
    alone = tmp_path / "alone.csv"
    alone.write_text("date,sales\n" + "\n".join(line.rsplit(",", 1)[0] for line in lines) + "\n")
    err = _fails(["forecast", alone, "-H", "2"], capsys)
    assert "each was left out, as the note(s) above say" in err and "--target" not in err


def test_a_retired_freq_alias_gets_pandas_suggestion(series_csv, capsys):
    """'--freq M' was told only that it is not a pandas frequency, where pandas names 'ME'."""
    from pandas.tseries.frequencies import to_offset

    def takes(alias):
        try:
            to_offset(alias)
        except ValueError:
            return False
        return True

    if takes("M"):
        pytest.skip("this pandas still takes 'M' (pandas < 3): nothing to suggest")
    err = _fails(["forecast", series_csv, "--freq", "M", "-H", "2"], capsys)
    assert "pandas suggests 'ME' (the end of each period; 'MS' for its start)" in err


def test_rows_of_separators_alone_at_the_end_are_left_out_with_a_note(tmp_path, capsys):
    """Spreadsheets export unused rows as ',,': refused as "time column ... is empty in row
    31; every row needs a time stamp". Such an empty row between data rows is still refused."""
    rows = [f"2020-01-{d:02d},{d % 7}.5,{d}.0" for d in range(1, 31)]
    path = tmp_path / "export.csv"
    path.write_text("date,sales,visits\n" + "\n".join(rows) + "\n,,\n,,\n")
    code, _, err = _run(["forecast", path, "-H", "2", "--max-epochs", "1",
                           "--hidden-size", "2"], capsys)
    assert code == 0 and "ignoring 2 empty row(s) at the end of" in err
    assert "fitted on export.csv (30 steps x 2 targets)" in err
    inside = tmp_path / "inside.csv"
    inside.write_text("date,sales,visits\n" + "\n".join([*rows[:10], ",,", *rows[10:]]) + "\n")
    assert "is empty in row 11" in _fails(["forecast", inside, "-H", "2"], capsys)


def test_rows_wider_than_the_header_are_not_read_shifted(tmp_path, capsys):
    """Rows holding more values than the header names: pandas took each row's first value for
    its index and read every column from its neighbour. A title line above the header was
    refused with a hint about --no-time-col, and a comma after each row's last value made the
    values the time column."""
    lines = [f"2020-01-{d:02d},{10 + d % 7}.25" for d in range(1, 31)]
    table = "date,sales\n" + "".join(f"{line}\n" for line in lines)
    clean = tmp_path / "clean.csv"
    clean.write_text(table)
    argv = ["-H", "2", "--max-epochs", "1", "--hidden-size", "2"]
    code, expected, _ = _run(["forecast", clean, *argv], capsys)
    assert code == 0
    for title in ("Daily sales in January 2020\n", "# exported by a tool\n"):
        path = tmp_path / "title.csv"
        path.write_text(title + table)
        err = _fails(["forecast", path, *argv], capsys)
        assert "names 1 column(s)" in err and "but its rows hold 2 values" in err
        assert "if the first line is a title or a comment, delete it" in err
    path = tmp_path / "cells.csv"  # a spreadsheet's title cell above a table of 3 columns
    path.write_text("Daily sales,,\ndate,sales,promo\n" + "".join(f"{x},0\n" for x in lines))
    err = _fails(["forecast", path, *argv], capsys)
    assert "'Daily sales,,', names one column and leaves the other 2 unnamed" in err
    path.write_text("Daily sales,\n" + table)  # of two fields: the header's names follow it
    err = _fails(["forecast", path, *argv], capsys)
    assert "'Daily sales,', names one column and leaves the other 1 unnamed" in err
    path.write_text("date,\n" + "".join(f"{line}\n" for line in lines))  # a column unnamed
    code, out, _ = _run(["forecast", path, *argv], capsys)
    assert code == 0 and out.splitlines()[0] == "date,Unnamed: 1"
    unnamed = tmp_path / "unnamed.csv"
    unnamed.write_text("date,sales\n" + "".join(f"{line},7.5\n" for line in lines))
    err = _fails(["forecast", unnamed, *argv], capsys)
    assert "names 2 column(s), ['date', 'sales'], but its rows hold 3 values" in err
    assert "first row: '2020-01-01,11.25,7.5'" in err
    trailing = tmp_path / "trailing.csv"
    trailing.write_text("date,sales\n" + "".join(f"{line},\n" for line in lines))
    code, out, err = _run(["forecast", trailing, *argv], capsys)
    assert code == 0 and out == expected
    assert "ignoring the empty field(s) at the end of every row of" in err


def test_utf16_files_are_read_and_workbooks_named(tmp_path, capsys):
    """A UTF-16 file (Excel's "Unicode text") and an Excel workbook were both told to re-save
    as UTF-8 with encoding='latin-1'."""
    table = "date,sales\n" + "".join(f"2020-01-{d:02d},{10 + d % 7}.25\n" for d in range(1, 31))
    argv = ["-H", "2", "--max-epochs", "1", "--hidden-size", "2"]
    utf8 = tmp_path / "utf8.csv"
    utf8.write_text(table, encoding="utf-8")
    code, expected, _ = _run(["forecast", utf8, *argv], capsys)
    assert code == 0
    for encoding in ("utf-16", "utf-16-be", "utf-32"):  # utf-32-le's mark starts as utf-16's
        path = tmp_path / f"{encoding}.csv"
        data = table.encode(encoding)
        path.write_bytes(data if encoding != "utf-16-be" else b"\xfe\xff" + data)
        code, out, _ = _run(["forecast", path, *argv], capsys)
        assert code == 0 and out == expected
    for name, head in (("book.xlsx", b"PK\x03\x04"), ("book.xls", b"\xd0\xcf\x11\xe0")):
        path = tmp_path / name
        path.write_bytes(head + bytes(64))
        err = _fails(["forecast", path, *argv], capsys)
        assert "is not a CSV file but a binary one (an Excel workbook?)" in err
        assert "latin-1" not in err and "pandas.read_excel(path)" in err
    bare = tmp_path / "bare16.csv"  # UTF-16 without its mark: '\x00d\x00a\x00t\x00e' stamps
    bare.write_bytes(table.encode("utf-16-le"))
    err = _fails(["forecast", bare, *argv], capsys)
    assert "holds NUL bytes" in err and "UTF-16 or UTF-32 without a byte-order mark" in err
    import zipfile

    with zipfile.ZipFile(tmp_path / "zipped.csv", "w") as archive:  # a zip named .csv
        archive.writestr("data.csv", table)
    err = _fails(["forecast", tmp_path / "zipped.csv", *argv], capsys)
    assert "is a zip archive, read as one by its name only: name it .zip" in err


def test_future_rows_years_ahead_are_refused_before_the_steps_are_counted(tmp_path, capsys):
    """A --future stamp in 2200 beside per-second data laid the whole grid up to it (numpy's
    MemoryError for 42 GiB, with a traceback) before the forecaster's cap could refuse it."""
    seconds = pd.date_range("2020-01-01", periods=60, freq="s").strftime("%Y-%m-%d %H:%M:%S")
    path, future = tmp_path / "sec.csv", tmp_path / "future.csv"
    pd.DataFrame({"t": seconds, "y": np.arange(60.0) % 7, "promo": np.arange(60) % 5 == 0}).to_csv(
        path, index=False
    )
    pd.DataFrame({"t": ["2200-01-01 00:00:00"], "promo": [True]}).to_csv(future, index=False)
    argv = ["forecast", path, "--target", "y", "--covariates", "promo", "--future", future]
    err = _fails(argv, capsys)
    assert "--future" in err and "its rows reach 2200-01-01, 5.68e+09 steps after the end" in err
    assert "Timestamp(" not in err and "fit or update" not in err


def test_a_loaded_model_refuses_history_of_another_frequency(series_csv, tmp_path, capsys):
    """Monthly data beside a daily model's --load-model was drawn as its history."""
    model = tmp_path / "m.joblib"
    days = pd.date_range("2020-01-01", periods=40, freq="D")
    daily = tmp_path / "daily.csv"
    pd.DataFrame({"month": days.strftime("%Y-%m-%d"), "sales": np.arange(40.0) % 7}).to_csv(
        daily, index=False
    )
    code, _, _ = _run(["forecast", daily, "-H", "2", *FAST, "--save-model", model], capsys)
    assert code == 0
    load = ["forecast", "--load-model", model, "-H", "2"]
    code, _, _ = _run([*load, daily, "--plot", tmp_path / "ok.png"], capsys)
    assert code == 0
    err = _fails([*load, series_csv, "--plot", tmp_path / "p.png"], capsys)
    assert "forecasts steps of frequency 'D'; the time stamps of" in err
    assert re.search(r"are about 3[01] times as far apart as its steps", err), err
    assert not (tmp_path / "p.png").exists()


def test_a_loaded_model_takes_history_of_its_frequency_however_spelled(tmp_path, capsys):
    """The frequency check compared names: a business-day model refused the last three
    weekdays of its own data (pandas infers 'D' for them), a model of 'M' periods the same
    data written by to_csv ('MS' stamps), a '24h' model 'D' stamps, and monthly stamps on
    the 15th (a DateOffset frequency) failed with a traceback (found by a review)."""
    import joblib

    from tsrnn import RNNForecaster

    n = 40
    values = np.sin(np.arange(n) / 3) + 5
    cases = {
        "b": pd.Series(values, index=pd.bdate_range("2024-01-01", periods=n)),
        "m": pd.Series(values, index=pd.period_range("2020-01", periods=n, freq="M")),
        "h24": pd.Series(values, index=pd.date_range("2020-01-01", periods=n, freq="24h")),
        "mid": pd.Series(
            values, index=pd.date_range("2015-01-15", periods=n, freq=pd.DateOffset(months=1))
        ),
    }
    for name, y in cases.items():
        model = tmp_path / f"{name}.joblib"
        joblib.dump(RNNForecaster(max_epochs=1, hidden_size=2, random_state=0).fit(y), model)
        data = tmp_path / f"{name}.csv"
        shown = y.iloc[-3:] if name == "b" else y  # Wednesday to Friday
        if isinstance(shown.index, pd.PeriodIndex):
            shown = shown.to_timestamp()
        shown.rename("y").rename_axis("t").to_csv(data)
        code, out, _ = _run(["forecast", data, "--load-model", model, "-H", "2"], capsys)
        assert code == 0 and len(out.splitlines()) == 3, name


def test_a_forecast_that_is_not_finite_exits_with_status_1(series_csv, capsys, monkeypatch):
    """A network whose training ran off forecast NaN and inf; the command wrote them and
    exited 0, so a script reading the status took the file for a forecast."""
    from tsrnn import RNNForecaster

    argv = ["forecast", series_csv, "--target", "sales", "-H", "3", *FAST]
    code, _, err = _run(argv, capsys)
    assert code == 0 and "not finite" not in err
    predict = RNNForecaster.predict

    def runs_off(self, what):
        forecast = predict(self, what)
        forecast.iloc[1:] = [np.inf, np.nan]
        return forecast

    monkeypatch.setattr(RNNForecaster, "predict", runs_off)
    code, out, err = _run(argv, capsys)
    assert code == 1
    assert len(out.splitlines()) == 4  # written all the same, to be looked at
    assert "tsrnn: error: 2 of the 3 forecast values written are not finite" in err


def test_a_model_fitted_on_periods_takes_a_future_file(tmp_path, capsys):
    """A model fitted in Python on monthly periods, with covariates, refused a --future file
    written by to_csv: "--freq 'M' is not a pandas frequency", though no --freq was given."""
    import joblib

    from tsrnn import RNNForecaster

    for freq in ("M", "Q-DEC"):
        n = 40
        index = pd.period_range("2010-01", periods=n, freq=freq)
        y = pd.Series(np.sin(np.arange(n) / 2) + 5, index=index, name="y")
        X = pd.DataFrame({"promo": (np.arange(n) % 3 == 0).astype(float)}, index=index)
        model = RNNForecaster(max_epochs=1, hidden_size=2, random_state=0).fit(X, y)
        saved, future = tmp_path / "m.joblib", tmp_path / "future.csv"
        joblib.dump(model, saved)
        ahead = pd.DataFrame(
            {"promo": [1.0, 0.0, 0.0]},
            index=pd.period_range(index[-1] + 1, periods=3, freq=freq).rename("period"),
        )
        ahead.to_csv(future)  # '2013-05', or '2019Q1'
        code, out, _ = _run(["forecast", "--load-model", saved, "--future", future], capsys)
        assert code == 0, freq
        got = pd.read_csv(io.StringIO(out), index_col=0)
        expected = model.predict(ahead)
        assert list(got.index) == [str(p) for p in expected.index]
        np.testing.assert_allclose(got["y"].to_numpy(), expected.to_numpy(), rtol=1e-12)


@pytest.mark.parametrize(
    ("sep", "values", "fix"),
    [
        # a spreadsheet's export in many locales
        (";", ["1000,5", "1055,25"], "sep=';', decimal=','"),
        (";", ["1000.5", "1055.25"], "sep=';')"),  # decimal=',' would read these as text
        ("\t", ["1000.5", "1055.25"], "sep='\\t')"),
    ],
    ids=["semicolon-decimal-comma", "semicolon", "tab"],
)
def test_files_with_another_separator_are_told_how_to_convert(tmp_path, capsys, sep, values, fix):
    # ';' between fields and decimal commas split each row at its comma: the file was told
    # its header named too few columns and to delete its first line as a title
    path = tmp_path / "other.csv"
    rows = [f"2020-0{i + 1}-01{sep}{v}" for i, v in enumerate(values)]
    path.write_text("\n".join([f"date{sep}sales", *rows]) + "\n")
    err = _fails(["forecast", path, "-H", "2"], capsys)
    assert "reads as one column named" in err and f"pandas.read_csv(path, {fix}" in err
    assert "delete it" not in err


@pytest.mark.parametrize("fmt", ["%b-%y", "%b %y", "%m/%y"])
def test_month_labels_with_a_two_digit_year_are_refused_not_read_as_year_one(
    tmp_path, capsys, fmt
):
    """'Jan-19' was read as 19 January of year 1 (pandas' dateutil takes 19 for the day), and
    a monthly series of 2019-2022 was fitted and forecast in year 1 without a word."""
    months = pd.date_range("2019-01-01", periods=36, freq="MS")
    path = tmp_path / "months.csv"
    pd.DataFrame({"month": months.strftime(fmt), "sales": np.arange(36.0)}).to_csv(
        path, index=False
    )
    err = _fails(["forecast", path, "-H", "3"], capsys)
    assert f"stamps such as {months[0].strftime(fmt)!r} that write no year in full" in err
    assert "(year 1)" in err and "2019-01 or Jan-2019" in err


def test_month_labels_with_the_year_in_full_are_read_as_month_starts(tmp_path, capsys):
    months = pd.date_range("2019-01-01", periods=36, freq="MS")
    path = tmp_path / "months.csv"
    values = 10 + np.sin(np.arange(36) * 2 * np.pi / 12)
    pd.DataFrame({"month": months.strftime("%b-%Y"), "sales": values}).to_csv(
        path, index=False
    )
    assert main(["forecast", str(path), "-H", "3", "--max-epochs", "1"]) == 0
    out = capsys.readouterr().out
    assert "2022-01-01" in out and "2022-03-01" in out


@pytest.mark.parametrize("freq", ["0D", "0h", "0MS", "-1D"])
def test_a_frequency_that_does_not_step_forward_is_refused(series_csv, capsys, freq):
    """--freq 0D ended in a traceback (ZeroDivisionError or ValueError inside pandas)."""
    err = _fails(["forecast", series_csv, f"--freq={freq}", "-H", "3"], capsys)
    assert f"--freq {freq!r} steps by" in err and "positive multiple" in err


def test_panel_ids_are_kept_as_written_where_numbers_would_change_them(tmp_path, capsys):
    """Ids 01 and 1 were read as the number 1, one series of both's rows (refused as
    duplicated stamps), and 007 was named 7 in the forecast."""
    flat = pd.read_csv(_panel_csv(tmp_path / "panel.csv"))
    path = tmp_path / "ids.csv"
    flat.assign(shop=flat["shop"].map({"a": "01", "b": "1"})).to_csv(path, index=False)
    code, out, _ = _run(["forecast", path, "--id-col", "shop", "-H", "2", *FAST], capsys)
    assert code == 0
    forecast = pd.read_csv(io.StringIO(out), dtype={"shop": str})
    assert forecast["shop"].tolist() == ["01", "01", "1", "1"]
    flat.assign(shop=flat["shop"].map({"a": "007", "b": "8"})).to_csv(path, index=False)
    code, out, _ = _run(["forecast", path, "--id-col", "shop", "-H", "2", *FAST], capsys)
    assert code == 0
    assert pd.read_csv(io.StringIO(out), dtype=str)["shop"].tolist() == ["007"] * 2 + ["8"] * 2


def test_numeric_panel_ids_that_read_back_as_written_stay_numbers(tmp_path, capsys):
    flat = pd.read_csv(_panel_csv(tmp_path / "panel.csv"))
    path = tmp_path / "ids.csv"
    flat.assign(shop=flat["shop"].map({"a": 3, "b": 12})).to_csv(path, index=False)
    code, out, _ = _run(["forecast", path, "--id-col", "shop", "-H", "2", *FAST], capsys)
    assert code == 0
    assert pd.read_csv(io.StringIO(out))["shop"].tolist() == [3, 3, 12, 12]


def test_relu_with_a_gated_cell_is_named_as_ignored_in_the_commands_terms(capsys):
    """--nonlinearity relu with the default GRU was dropped without a word."""
    argv = ["forecast", "--dataset", "air_passengers", "-H", "2", *FAST]
    code, _, err = _run([*argv, "--nonlinearity", "relu"], capsys)
    assert code == 0
    assert (
        "tsrnn: warning: --nonlinearity relu is the activation of --cell rnn; --cell gru has "
        "its own gates and ignores it. Set --cell rnn to use it, or leave --nonlinearity tanh"
    ) in err
    code, _, err = _run([*argv, "--nonlinearity", "relu", "--cell", "rnn"], capsys)
    assert code == 0 and "warning" not in err


def _zoned_panel(path, stamps):
    rows = [
        pd.DataFrame({"id": key, "t": index.astype(str), "y": np.arange(len(index)) % 7.0})
        for key, index in stamps.items()
    ]
    pd.concat(rows).to_csv(path, index=False)
    return path


def test_a_zoned_panel_whose_series_do_not_all_cross_a_dst_change_is_read_in_one_zone(
    tmp_path, capsys
):
    """A series crossing the spring change was read in Europe/Berlin, one that did not in
    UTC+01:00, and the panel's time level held plain objects: "cannot fit the model:
    Unsupported time level of type Index (dtype object)"."""
    berlin = {
        "a": pd.date_range("2021-03-01", periods=60, freq="D", tz="Europe/Berlin"),
        "b": pd.date_range("2021-01-01", periods=59, freq="D", tz="Europe/Berlin"),
    }
    path = _zoned_panel(tmp_path / "zoned.csv", berlin)
    code, out, _ = _run(["forecast", path, "--id-col", "id", "-H", "2", *FAST], capsys)
    assert code == 0
    got = pd.read_csv(io.StringIO(out))
    assert got["t"].tolist() == [
        "2021-04-30 00:00:00+02:00",
        "2021-05-01 00:00:00+02:00",
        "2021-03-01 00:00:00+01:00",
        "2021-03-02 00:00:00+01:00",
    ]


def test_a_zoned_panel_that_no_one_zone_explains_is_refused(tmp_path, capsys):
    days = pd.date_range("2021-01-01", periods=40, freq="D")
    path = _zoned_panel(
        tmp_path / "zoned.csv",
        {"a": days.tz_localize("Asia/Kolkata"), "b": days.tz_localize("America/Lima")},
    )
    err = _fails(["forecast", path, "--id-col", "id", "-H", "2"], capsys)
    assert "holds series in different time zones (series 'a' in UTC+05:30, series 'b' in" in err
    assert "no one zone has all their UTC offsets" in err and "tz_convert('UTC')" in err
    stamps = {"a": days.tz_localize("Asia/Kolkata"), "b": days}
    path = _zoned_panel(tmp_path / "mixed.csv", stamps)
    err = _fails(["forecast", path, "--id-col", "id", "-H", "2"], capsys)
    assert "stamps without UTC offsets (series 'b') and with them (series 'a')" in err


@pytest.mark.parametrize("fmt", ["%H:%M", "%I:%M %p", "%H:%M:%S"])
def test_times_of_day_without_dates_are_refused(tmp_path, capsys, fmt):
    """pandas puts bare times on the day it runs: a day of hourly rows was fitted and
    forecast on today's date without a word (two days were refused as duplicated stamps,
    naming today)."""
    hours = pd.date_range("2021-01-01", periods=24, freq="h")
    path = tmp_path / "hours.csv"
    pd.DataFrame({"time": hours.strftime(fmt), "y": np.arange(24.0)}).to_csv(path, index=False)
    err = _fails(["forecast", path, "-H", "2"], capsys)
    assert "holds times of day without dates" in err and "2021-01-31 08:00" in err


def test_the_time_or_id_column_named_as_target_or_covariate_is_said_to_label_the_rows(
    tmp_path, capsys
):
    """--target date (the time column) said "unknown column 'date'", as if it were not there."""
    days = pd.date_range("2021-01-01", periods=30, freq="D")
    path = tmp_path / "days.csv"
    pd.DataFrame({"date": days.strftime("%Y-%m-%d"), "y": np.arange(30.0), "x": 1.0}).to_csv(
        path, index=False
    )
    err = _fails(["forecast", path, "-H", "2", "--target", "date"], capsys)
    assert "'date' is the time column (--target), which labels the rows" in err
    assert "['y', 'x']" in err and "unknown column" not in err
    panel = _panel_csv(tmp_path / "panel.csv")
    err = _fails(["forecast", panel, "--id-col", "shop", "-H", "2", "--target", "shop"], capsys)
    assert "'shop' is the series id column (--target)" in err and "--time-col" not in err


def test_a_panel_s_missing_value_is_named_by_series_and_date(tmp_path, capsys):
    """The message showed Python's repr: (first at ('b', Timestamp('2010-04-06 00:00:00')))."""
    flat = pd.read_csv(_panel_csv(tmp_path / "panel.csv"))
    flat.loc[flat.index[35], "sales"] = np.nan
    path = tmp_path / "gap.csv"
    flat.to_csv(path, index=False)
    err = _fails(["forecast", path, "--id-col", "shop", "-H", "2"], capsys)
    assert "column 'sales' has 1 missing value(s) (first at series 'b', 2010-09-01)" in err
    assert "Timestamp" not in err


@pytest.mark.parametrize("start", ["2021-03-20", "2021-10-25"])
def test_local_hourly_stamps_across_a_clock_change_are_told_so(tmp_path, capsys, start):
    """Berlin's local hours written without offsets skip 02:00 on 28 March and repeat it on
    31 October: the messages said to fill a gap or aggregate duplicates, and in autumn, with
    whole-number values, that the file looked like a panel with one series per value."""
    hours = pd.date_range(start, periods=24 * 14, freq="h", tz="Europe/Berlin")
    path = tmp_path / "local.csv"
    pd.DataFrame(
        {"time": hours.tz_localize(None).strftime("%Y-%m-%d %H:%M"), "y": np.arange(336) % 24}
    ).to_csv(path, index=False)
    err = _fails(["forecast", path, "-H", "2"], capsys)
    assert "a daylight-saving change" in err and "with their UTC offsets" in err
    assert "looks like a panel" not in err
    # written with their offsets, as the message says, they are read in their zone
    pd.DataFrame({"time": hours.astype(str), "y": np.arange(336) % 24}).to_csv(path, index=False)
    code, out, _ = _run(["forecast", path, "-H", "2", *FAST], capsys)
    assert code == 0 and len(out.splitlines()) == 3


def test_daily_duplicates_get_no_clock_change_hint(tmp_path, capsys):
    days = pd.date_range("2021-01-01", periods=30, freq="D").strftime("%Y-%m-%d").tolist()
    path = tmp_path / "dup.csv"
    pd.DataFrame({"day": days[:10] + days[9:29], "y": np.arange(30.0)}).to_csv(path, index=False)
    err = _fails(["forecast", path, "-H", "2"], capsys)
    assert "duplicated stamps (first: 2021-01-10)" in err and "daylight" not in err


def test_yyyymm_future_rows_after_yyyymm_history_are_read_as_months(tmp_path, capsys):
    """A --future file of three months within one year is evenly spaced as numbers: it was
    read as step numbers and refused beside the history's months ("counts steps as
    numbers, but the history's time stamps are dates")."""
    months = pd.date_range("2019-06-01", periods=24, freq="MS")
    history, future = tmp_path / "hist.csv", tmp_path / "fut.csv"
    pd.DataFrame(
        {"month": months.strftime("%Y%m").astype(int), "y": np.arange(24.0), "promo": 0}
    ).to_csv(history, index=False)
    ahead = pd.date_range("2021-06-01", periods=3, freq="MS")
    pd.DataFrame({"month": ahead.strftime("%Y%m").astype(int), "promo": 1}).to_csv(
        future, index=False
    )
    argv = ["forecast", history, "--target", "y", "--covariates", "promo", "--future", future]
    code, out, _ = _run([*argv, *FAST], capsys)
    assert code == 0
    got = pd.read_csv(io.StringIO(out), index_col=0, parse_dates=True).index
    assert list(got) == list(ahead)


def test_a_yyyymm_panel_reads_every_series_as_months(tmp_path, capsys):
    """Series A within one year stayed step numbers, series B across years became dates, and
    the fit refused the panel's mixed time level in Python's terms."""
    a = np.arange(201901, 201913)
    b = pd.date_range("2019-06-01", periods=20, freq="MS").strftime("%Y%m").astype(int)
    rows = [("A", m, float(i)) for i, m in enumerate(a)] + [
        ("B", m, float(i)) for i, m in enumerate(b)
    ]
    path = tmp_path / "panel.csv"
    pd.DataFrame(rows, columns=["id", "month", "y"]).to_csv(path, index=False)
    code, out, _ = _run(["forecast", path, "--id-col", "id", "-H", "2", *FAST], capsys)
    assert code == 0
    got = pd.read_csv(io.StringIO(out))
    assert got["month"].tolist() == ["2020-01-01", "2020-02-01", "2021-02-01", "2021-03-01"]


def test_a_new_store_beside_an_old_one_is_still_offered_as_a_panel(tmp_path, capsys):
    """The tenth-of-rows rule (for the autumn hour beside whole-number values) also took the
    hint from text ids: 50 rows of a new store beside 1000 of an old one were told to
    aggregate the duplicates, which would merge the two stores."""
    days = pd.date_range("2020-01-01", periods=1000, freq="D")
    old = pd.DataFrame({"date": days.strftime("%Y-%m-%d"), "store": "A", "sales": 1.0})
    new = old.iloc[-50:].assign(store="B")
    path = tmp_path / "stores.csv"
    pd.concat([old, new]).to_csv(path, index=False)
    err = _fails(["forecast", path, "-H", "2"], capsys)
    assert "looks like a panel in long layout, one series per 'store'" in err


def test_a_panel_chosen_with_id_col_may_be_named_year_and_day(tmp_path, capsys):
    """--id-col year asks for one series per year: the Python refusal of (year, day) levels
    (read as one calendar) refused it, with advice in Python's terms."""
    rows = [(year, day, float(day % 7)) for year in (2019, 2020, 2021) for day in range(1, 41)]
    path = tmp_path / "yearday.csv"
    pd.DataFrame(rows, columns=["year", "day", "visits"]).to_csv(path, index=False)
    code, out, _ = _run(["forecast", path, "--id-col", "year", "-H", "2", *FAST], capsys)
    assert code == 0
    assert pd.read_csv(io.StringIO(out))["day"].tolist() == [41, 42] * 3


def test_quarter_hours_across_the_autumn_change_get_the_clock_change_hint(tmp_path, capsys):
    stamps = pd.date_range("2021-10-30", periods=96 * 3, freq="15min", tz="Europe/Berlin")
    path = tmp_path / "q15.csv"
    pd.DataFrame(
        {"time": stamps.tz_localize(None).strftime("%Y-%m-%d %H:%M"), "y": np.arange(288.0)}
    ).to_csv(path, index=False)
    err = _fails(["forecast", path, "-H", "2"], capsys)
    assert "duplicated stamps (first: 2021-10-31 02:00:00)" in err
    assert "a daylight-saving change" in err


def test_a_zoned_panel_refusal_names_the_series_no_zone_fits(tmp_path, capsys):
    """With many series Berlin fits, the message named two that agree and not the one
    (Asia/Kolkata) that no zone fits beside them."""
    stamps = {}
    for i in range(6):
        start = "2021-03-01" if i % 2 == 0 else "2021-01-01"  # crosses the change or not
        stamps[f"s{i}"] = pd.date_range(start, periods=40, freq="D", tz="Europe/Berlin")
    stamps["s6"] = pd.date_range("2021-01-01", periods=40, freq="D", tz="Asia/Kolkata")
    path = _zoned_panel(tmp_path / "zoned.csv", stamps)
    err = _fails(["forecast", path, "--id-col", "id", "-H", "2"], capsys)
    # s0's stamps read in the first zone of their offsets (Europe/Amsterdam), as a Berlin's
    assert re.search(r"\(series 's0' in Europe/\w+, series 's6' in UTC\+05:30\)", err)


def test_the_row_numbers_named_as_target_are_no_time_column(tmp_path, capsys):
    path = tmp_path / "plain.csv"
    pd.DataFrame({"y": np.arange(30.0)}).to_csv(path, index=False)
    err = _fails(["forecast", path, "--no-time-col", "-H", "2", "--target", "step"], capsys)
    assert "'step' is the row number column (--target)" in err and "--time-col" not in err
