"""hf: traces are kept on disk: the second command on the same model and step loads the graph."""

import pytest

pytest.importorskip("transformers")

from rooflab import api  # noqa: E402
from rooflab.trace import cache, source  # noqa: E402


def test_a_second_use_loads_the_trace_and_predicts_the_same(tmp_path, monkeypatch):
    monkeypatch.setenv("ROOFLAB_CACHE_DIR", str(tmp_path))
    source._traced_hf.cache_clear()
    first = source.load("hf:qwen2.5-0.5b", {"batch": 2}, "decode")
    assert len(list(tmp_path.glob("*.pickle"))) == 1
    source._traced_hf.cache_clear()

    def no_trace(*a, **k):
        raise AssertionError("traced again")
    monkeypatch.setattr("rooflab.trace.hf.trace_hf", no_trace)
    second = source.load("hf:qwen2.5-0.5b", {"batch": 2}, "decode")
    hw = api.load_hardware("h200")
    assert api.predict_graph(second, hw).totals == api.predict_graph(first, hw).totals
    assert second.notes == first.notes and second.description == first.description


def test_the_key_changes_with_the_step_and_the_config(tmp_path):
    cfg = tmp_path / "config.json"
    cfg.write_text('{"model_type": "llama"}')
    k = cache.key(cfg, "decode", {"batch": 1})
    assert k != cache.key(cfg, "decode", {"batch": 2})
    assert k != cache.key(cfg, "prefill", {"batch": 1})
    cfg.write_text('{"model_type": "llama", "hidden_size": 8}')
    assert k != cache.key(cfg, "decode", {"batch": 1})


def test_no_cache_and_unwritable_cache_are_not_errors(tmp_path, monkeypatch):
    monkeypatch.setenv("ROOFLAB_NO_CACHE", "1")
    assert cache.cache_dir() is None and cache.load("x") is None
    monkeypatch.delenv("ROOFLAB_NO_CACHE")
    blocked = tmp_path / "file"
    blocked.write_text("")
    monkeypatch.setenv("ROOFLAB_CACHE_DIR", str(blocked / "sub"))   # a folder under a file
    cache.store("x", None)                                          # skipped, no error
    assert cache.load("x") is None


def test_an_entry_that_unpickles_to_an_error_is_a_miss(tmp_path, monkeypatch):
    # a pickle that raises while loading (here int('x'): ValueError) is skipped like any other
    monkeypatch.setenv("ROOFLAB_CACHE_DIR", str(tmp_path))
    (tmp_path / "k.pickle").write_bytes(b"cbuiltins\nint\n(S'x'\ntR.")
    assert cache.load("k") is None
