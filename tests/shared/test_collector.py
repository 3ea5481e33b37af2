"""The collector paused around a call: off during it, as it was after it, even on an error."""

from __future__ import annotations

import gc

import pytest

from shared.core import collector


def test_off_during_the_call_and_on_again_after_it_even_after_an_error() -> None:
    assert gc.isenabled()
    assert collector.paused(gc.isenabled) is False
    assert gc.isenabled()

    def fails() -> None:
        raise ValueError("no")

    with pytest.raises(ValueError, match="no"):
        collector.paused(fails)
    assert gc.isenabled()


def test_a_collector_turned_off_elsewhere_stays_off() -> None:
    gc.disable()
    try:
        collector.paused(lambda: None)
        assert not gc.isenabled()
    finally:
        gc.enable()
