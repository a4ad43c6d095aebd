"""The docstrings of tsrnn.datasets: numpydoc sections present and Examples that run."""

from __future__ import annotations

import doctest
import importlib
import inspect

import pytest

import tsrnn.datasets

MODULES = ["tsrnn.datasets", "tsrnn.datasets._loaders", "tsrnn.datasets._generators"]


@pytest.mark.parametrize("name", MODULES)
def test_doctests_pass(name):
    module = importlib.import_module(name)
    result = doctest.testmod(
        module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE, verbose=False
    )
    assert result.attempted > 0, f"{name} has no examples"
    assert result.failed == 0, f"{result.failed} of {result.attempted} examples failed in {name}"


@pytest.mark.parametrize("name", tsrnn.datasets.__all__)
def test_every_public_function_has_examples_that_run(name):
    # test_doctests_pass counts a module's examples: a function with an empty Examples
    # section passed it
    function = getattr(tsrnn.datasets, name)
    (test,) = doctest.DocTestFinder(recurse=False).find(function, name)
    assert test.examples, f"{name} has no examples"
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    runner.run(test, out=lambda _: None)
    assert runner.summarize(verbose=False).failed == 0


@pytest.mark.parametrize("name", tsrnn.datasets.__all__)
def test_public_functions_have_numpydoc_sections(name):
    doc = inspect.getdoc(getattr(tsrnn.datasets, name))
    sections = ["Returns", "Examples"]
    if inspect.signature(getattr(tsrnn.datasets, name)).parameters:
        sections.append("Parameters")
    for section in sections:
        assert f"\n{section}\n{'-' * len(section)}\n" in doc, f"{name} lacks '{section}'"


def test_every_bundled_file_has_its_terms_in_license():
    """The package's licence expression covers the data it ships: each file in
    ``tsrnn/datasets/data`` must be named, with its terms, in LICENSE."""
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    text = (root / "LICENSE").read_text()
    data = Path(tsrnn.datasets.__file__).parent / "data"
    files = sorted(p.name for p in data.iterdir() if not p.name.startswith("."))
    assert files, data
    assert [f for f in files if f not in text] == []
    pyproject = (root / "pyproject.toml").read_text()
    expression = text.split("therefore reads\n")[1].split(".\n")[0].replace("\n", " ")
    assert f'license = "{expression}"' in pyproject
