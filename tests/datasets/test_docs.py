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
def test_public_functions_have_numpydoc_sections(name):
    doc = inspect.getdoc(getattr(tsrnn.datasets, name))
    sections = ["Returns", "Examples"]
    if inspect.signature(getattr(tsrnn.datasets, name)).parameters:
        sections.append("Parameters")
    for section in sections:
        assert f"\n{section}\n{'-' * len(section)}\n" in doc, f"{name} lacks '{section}'"
