"""Ctrl-C, SIGTERM and SIGHUP become one exception that knows its signal, whoever catches it."""

from __future__ import annotations

import os
import signal

import pytest

from research.run.signals import Interrupted, interruption, signals_raise


def test_an_interruption_knows_its_signal_and_exit_status():
    stop = Interrupted(signal.SIGTERM)
    assert (stop.name, stop.exit_code) == ("SIGTERM", 143)
    assert isinstance(stop, KeyboardInterrupt)  # Lightning shuts down gracefully on it


def test_the_signal_is_found_behind_what_lightning_raises_in_its_place():
    try:
        try:
            raise Interrupted(signal.SIGHUP)
        except KeyboardInterrupt:
            raise SystemExit(1) from None  # Lightning's Ctrl-C handling, context kept
    except SystemExit as exit_:
        assert interruption(exit_).name == "SIGHUP"

    class SIGTERMException(SystemExit):  # Lightning's own SIGTERM notice, by name
        pass

    assert interruption(SIGTERMException(0)).name == "SIGTERM"
    assert interruption(KeyboardInterrupt()).name == "SIGINT"
    assert interruption(ValueError("no")) is None and interruption(None) is None


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP])
def test_within_the_block_a_signal_raises_and_afterwards_the_old_handler_is_back(signum):
    before = signal.getsignal(signum)
    with pytest.raises(Interrupted) as caught, signals_raise():
        os.kill(os.getpid(), signum)
    assert caught.value.signum == signum
    assert signal.getsignal(signum) is before
