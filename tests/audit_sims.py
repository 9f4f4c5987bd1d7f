"""Audits of seeded resamples of one population, shared by the compare/history/export tests.

The population: 30,000 people, sex (45/55) and race (70/24/6), three segments; race C leans to
segment 2. ``population(shift=True)`` plants a change: 60 % of race C in segment 0 move to
segment 2 (segment 0 then holds very few C) — balance[race] and capacity fairness[race] get
worse, nothing about sex alone changes.
"""

from __future__ import annotations

import functools
import logging
from pathlib import Path

import numpy as np
import polars as pl

CHAIN = """
[[audit]]
use = "balance"
[[audit]]
use = "distribution"
[[audit]]
use = "capacity"
"""


def population(shift: bool = False, n: int = 30_000, seed: int = 1) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    sex = rng.choice(["F", "M"], n, p=[0.45, 0.55])
    race = rng.choice(["A", "B", "C"], n, p=[0.70, 0.24, 0.06])
    p = np.where((race == "C")[:, None], [[0.2, 0.3, 0.5]],
                 np.where((sex == "F")[:, None], [[0.30, 0.35, 0.35]], [[0.35, 0.35, 0.30]]))
    seg = (rng.random(n)[:, None] > np.cumsum(p, axis=1)).sum(axis=1)
    if shift:
        move = (race == "C") & (seg == 0) & (rng.random(n) < 0.6)
        seg = np.where(move, 2, seg)
    return pl.DataFrame({"sex": sex, "race": race, "segment": seg})


def chain_file(folder: Path) -> Path:
    p = folder / "compare_chain.toml"
    if not p.exists():
        p.write_text(CHAIN, encoding="utf-8")
    return p


@functools.cache
def _chain_dir() -> Path:
    import tempfile

    return Path(tempfile.mkdtemp(prefix="fairaudit-sims-"))


@functools.cache
def resample_audit(i: int, *, shift: bool = False, rows: int = 3_000) -> dict:
    """The audit JSON document of seeded resample ``i`` (cached for the whole session)."""
    import fairaudit

    logging.getLogger("fairaudit").setLevel(logging.ERROR)
    pop = population(shift=shift)
    idx = np.random.default_rng(10_000 * int(shift) + 100 + i).integers(0, pop.height, rows)
    # timing kept so that histories have run dates
    run = fairaudit.audit(pop[idx], sensitive=["sex", "race"], labels="segment",
                          chain=chain_file(_chain_dir()), seed=i, timing=True)
    return run.to_json()
