"""The README's pipeline example gives a meaningful PASS/FAIL on a table with an 18-person group
(issue 11): run the exact command from the README on a COMPAS-sized table."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import numpy as np
import polars as pl
from click.testing import CliRunner

from fairaudit.cli import main

ROOT = Path(__file__).resolve().parents[1]
RACES = {"African-American": 3696, "Caucasian": 2454, "Hispanic": 637, "Other": 377,
         "Asian": 32, "Native American": 18}


def _readme_command() -> list[str]:
    text = (ROOT / "README.md").read_text()
    block = re.search(r"In a pipeline.*?```\n(.*?)```", text, re.S).group(1)
    return shlex.split(block.replace("\\\n", " "))


def _table(unfair: bool, seed: int = 0) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    race = np.concatenate([[r] * n for r, n in RACES.items()]).astype(object)
    n = race.size
    gender = rng.choice(["Female", "Male"], size=n, p=[0.19, 0.81])
    p_fair = np.array([1 / 3, 1 / 3, 1 / 3])
    seg = rng.choice(3, size=n, p=p_fair)
    if unfair:  # most African-American people in segment 2, few in segment 0
        aa = race == "African-American"
        seg[aa] = rng.choice(3, size=int(aa.sum()), p=[0.05, 0.15, 0.8])
    return pl.DataFrame({"race": race.astype(str), "gender": gender, "segment": seg})


def _run(tmp_path: Path, df: pl.DataFrame) -> tuple[int, str]:
    data = tmp_path / "segments"
    data.mkdir()
    df.write_parquet(data / "part-0.parquet")
    args = _readme_command()[1:]  # drop "fairaudit"
    args[1] = str(data / "*.parquet")
    for flag, name in (("--out", "audit.html"), ("--json", "audit.json"),
                       ("--summary-md", "summary.md")):
        args[args.index(flag) + 1] = str(tmp_path / name)
    res = CliRunner().invoke(main, args)
    return res.exit_code, res.output


def test_readme_command_passes_a_fair_segmentation_with_an_18_person_group(tmp_path):
    code, out = _run(tmp_path, _table(unfair=False))
    assert code == 0, out
    # the small group cannot show fairness: a warning, not a failure
    assert "WARN" in out


def test_readme_command_fails_an_unfair_segmentation(tmp_path):
    code, out = _run(tmp_path, _table(unfair=True))
    assert code == 1, out
    assert "FAIL" in out
