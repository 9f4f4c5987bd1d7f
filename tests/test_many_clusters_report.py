"""The report stays readable with many clusters, and third-party warnings never reach stderr."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import polars as pl


def test_many_clusters_show_the_worst_n_with_a_note(monkeypatch):
    from fairaudit_builtins import section_helpers as sections  # where MAX_CLUSTERS is read

    import fairaudit
    from fairaudit.report.render import render_html

    rng = np.random.default_rng(0)
    n, k = 6000, 60
    df = pl.DataFrame({"sex": rng.choice(["F", "M"], size=n),
                       "segment": rng.integers(0, k, size=n)})
    run = fairaudit.audit(df, sensitive="sex", labels="segment", bootstrap=0)
    monkeypatch.setattr(sections, "MAX_CLUSTERS", 10)
    html = render_html(run)
    assert "10 of 60 clusters shown (the 10 with the lowest balance[sex], then the largest)" in html
    lab = run.labellings[0]
    only, _ = sections.shown_clusters(run, lab)
    per = {r["cluster"]: r["value"] for r in run.results_for(metric="balance", attribute="sex")[0]
           ["per_cluster"]}
    assert sorted(per.values())[:10] == sorted(per[c] for c in only)
    # the JSON keeps every cluster
    assert len(lab["cluster_sizes"]) == 60
    monkeypatch.setattr(sections, "MAX_CLUSTERS", 1000)
    assert "clusters shown" not in render_html(run)


def test_non_latin_names_leave_stderr_empty(tmp_path):
    rng = np.random.default_rng(1)
    n = 600
    df = pl.DataFrame({
        "性别": rng.choice(["女性", "男性"], size=n),
        "العرق": rng.choice(["عربي", "كردي", "آخر"], size=n),
        "分段": rng.integers(0, 3, size=n),
        "x": rng.normal(size=n),
    })
    data = tmp_path / "数据.csv"
    df.write_csv(data)
    env = dict(os.environ, PYTHONWARNINGS="default")
    proc = subprocess.run(
        [sys.executable, "-m", "fairaudit.cli", "audit", str(data), "--sensitive", "性别,العرق",
         "--labels", "分段", "--bootstrap", "20", "--quiet", "--out", str(tmp_path / "r.html")],
        capture_output=True, text=True, env=env, check=False, timeout=900,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    html = (tmp_path / "r.html").read_text(encoding="utf-8")
    assert "女性" in html and "العرق" in html


def test_thousands_of_groups_keep_the_page_small(tmp_path):
    """A 300-value attribute in an intersection makes thousands of groups: the page's group
    tables show TABLE_ROWS rows and count the rest, result details clip long lists; the JSON
    keeps every group. (A trial's 4-attribute intersection wrote a 5 MB page.)"""
    import numpy as np
    import polars as pl

    import fairaudit
    from fairaudit.report.render import TABLE_ROWS, render_html

    rng = np.random.default_rng(0)
    n = 6000
    frame = pl.DataFrame({"zip": [f"z{i:03d}" for i in rng.integers(0, 300, n)],
                          "sex": rng.choice(["f", "m"], n).tolist(),
                          "seg": rng.integers(0, 3, n).tolist()})
    run = fairaudit.audit(frame, sensitive=["zip", "sex"], labels="seg", bootstrap=50)
    page = render_html(run)
    assert len(page) < 700_000, len(page)
    inter = run.doc["input"]["groups"]["zip|sex"]
    assert len(inter) > TABLE_ROWS
    assert f"and {len(inter) - TABLE_ROWS:,} more groups (all in the JSON: input.groups)" in page
    assert "more (all in the JSON)" in page  # a result's clipped detail
