"""Shared fixtures of the clustering tests."""

from __future__ import annotations

import pytest


@pytest.fixture
def pivot_calls(monkeypatch) -> list:
    """Force the Borůvka pivot search onto small data (components of a few dozen points far
    apart, every pass run, deep k-NN queries capped); returns a list that gets one entry per
    pivot search."""
    import fairaudit.cluster._boruvka as bo

    monkeypatch.setattr(bo, "_PIVOT_MIN_QUERY", 8)
    monkeypatch.setattr(bo, "_FINISH_ENTRIES", 0)
    monkeypatch.setattr(bo, "_PIVOT_GRAPH_K", 4)
    monkeypatch.setattr(bo, "_PIVOT_GAP", 0.5)
    monkeypatch.setattr(bo, "_GLOBAL_CAP", 16)
    calls: list = []
    real = bo._resolve_component_pivots
    monkeypatch.setattr(
        bo, "_resolve_component_pivots", lambda *a, **k: calls.append(1) or real(*a, **k)
    )
    return calls
