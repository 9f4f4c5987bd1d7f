"""The shipped two-group table of the field's tests: a 1,500-row draw of UCI Adult
(tests/data/field/adult_sample.csv, README there), five numeric columns z-scored, sex as groups."""

from __future__ import annotations

from pathlib import Path

import numpy as np

DATA = Path(__file__).resolve().parents[1] / "data" / "field" / "adult_sample.csv"


def adult_sample() -> tuple[np.ndarray, np.ndarray]:
    """(X, sex codes: 1 = Female) of the shipped Adult sample."""
    import polars as pl

    df = pl.read_csv(DATA)
    X = df.select(["age", "education-num", "hours-per-week", "capital-gain",
                   "capital-loss"]).to_numpy().astype(float)
    X = (X - X.mean(axis=0)) / X.std(axis=0)
    return X, (df["sex"] == "Female").to_numpy().astype(np.int64)
