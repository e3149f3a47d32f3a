"""The numba warm-up's plumbing (Note [numba compiled once per test run]); the warm-up itself runs before the suite."""
from __future__ import annotations

from tests import numba_cache


def test_the_shares_compile_every_pair_once():
    for shares in (1, 2, 3):
        pairs = [p for share in range(shares) for p in numba_cache.share_of(share, shares)]
        assert sorted(pairs) == sorted(numba_cache.WARM) and len(set(pairs)) == len(pairs)


def test_index_writes_hold_the_lock_and_are_restored(tmp_path, monkeypatch):
    import fcntl

    from numba.core import caching

    original, held = caching.IndexDataCacheFile.save, []

    def fake_save(self, key, data):
        with open(tmp_path / "lock", "a") as f:  # a second exclusive lock on the file cannot be taken now
            try:
                fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
                held.append(False)
            except BlockingIOError:
                held.append(True)

    monkeypatch.setattr(caching.IndexDataCacheFile, "save", fake_save)
    with numba_cache._serialised_index_writes(tmp_path / "lock"):
        caching.IndexDataCacheFile.save(None, "key", "data")
    assert held == [True] and caching.IndexDataCacheFile.save is fake_save
    monkeypatch.setattr(caching.IndexDataCacheFile, "save", original)
