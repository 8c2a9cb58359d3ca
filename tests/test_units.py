"""Numbers as text (rooflab/units.py)."""

from rooflab.units import format_time


def test_times_take_their_prefix_and_keep_their_sign():
    assert format_time(2.76e-6) == "2.76 µs"
    assert format_time(-2.76e-6) == "-2.76 µs"          # a fusion that costs time
    assert format_time(-1.5e-3) == "-1.5 ms"
    assert format_time(4e-9) == "4 ns"
    assert format_time(0) == "0"


def test_a_value_that_rounds_to_1000_takes_the_next_unit():
    from rooflab.units import format_bytes, format_flops
    assert format_flops(999.6e9) == "1 TFLOP"          # not "1e+03 GFLOP"
    assert format_flops(999.4e9) == "999 GFLOP"
    assert format_bytes(999.7e6) == "1 GB"
    assert format_time(999.96e-6) == "1 ms"            # not "1e+03 µs"
    assert format_time(1234.0) == "1234 s"             # the largest unit has no next one


def test_times_below_a_picosecond_are_not_printed_in_exponent_form():
    assert format_time(1.87e-14) == "<0.001 ns"
    assert format_time(3.83e-11) == "0.0383 ns"


def test_a_unit_is_skipped_only_to_one_1000_times_larger():
    from rooflab.units import format_bytes, format_rate
    assert format_rate(5000) == "5000 FLOP/s"           # no k: not "0.005 MFLOP/s"
    assert format_rate(999.5) == "1000 FLOP/s"
    assert format_time(999.95) == "1000 s"              # the largest unit
    assert format_bytes(999.96e12) == "1000 TB"
    assert format_time(-1e-13) == "<0.001 ns"
