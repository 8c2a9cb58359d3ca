"""The terminal tables (rooflab.report.table): aligned columns, no trailing blanks."""

from rooflab.report.table import grid


def test_grid_lines_carry_no_trailing_blanks_when_the_last_column_is_empty():
    text = grid(["batch", "note"], [["1", ""], ["8", ""]])
    assert text.splitlines() == ["batch  note", "-----  ----", "1", "8"]
    text = grid(["batch", ""], [["1", ""]])
    assert text.splitlines() == ["batch", "-----", "1"]
