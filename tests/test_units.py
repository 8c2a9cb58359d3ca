"""Numbers as text (rooflab/units.py)."""

from rooflab.units import format_time


def test_times_take_their_prefix_and_keep_their_sign():
    assert format_time(2.76e-6) == "2.76 µs"
    assert format_time(-2.76e-6) == "-2.76 µs"          # a fusion that costs time
    assert format_time(-1.5e-3) == "-1.5 ms"
    assert format_time(4e-9) == "4 ns"
    assert format_time(0) == "0"
