"""Plurals of the names users give their columns and the clusters' own names (issue 23)."""

from __future__ import annotations

import pytest

from fairaudit.report.words import cluster_label, plural


@pytest.mark.parametrize(("word", "expected"), [
    ("class", "classes"), ("status", "statuses"), ("salary", "salaries"),
    ("jobclass", "jobclasses"), ("cluster", "clusters"), ("segment", "segments"),
    ("box", "boxes"), ("branch", "branches"), ("dish", "dishes"),
    ("day", "days"), ("key", "keys"), ("person", "people"), ("Person", "People"),
    ("child", "children"), ("series", "series"), ("category", "categories"),
    ("leaf", "leaves"), ("hero", "heroes"), ("CLASS", "CLASSES"), ("job_class", "job_classes"),
    ("income band", "income bands"), ("JobClass", "JobClasses"), ("age-group", "age-groups"),
    ("k3", "k3s"), ("bus", "buses"), ("analysis", "analyses"), ("city", "cities"),
])
def test_plural(word, expected):
    assert plural(word) == expected


def test_plural_keeps_the_singular_for_one():
    assert plural("class", 1) == "class"
    assert plural("class", 2) == "classes"
    assert plural("class", 0) == "classes"


def test_no_plural_adds_a_bare_s_to_a_sibilant():
    for word in ("class", "status", "jobclass", "address", "tax", "match", "wish"):
        assert not plural(word).endswith(word[-1] + "s") or plural(word).endswith("es")


def test_cluster_label_uses_the_clusters_own_names():
    lab = {"cluster_names": ["1st", "2nd", "engineering crew"]}
    assert cluster_label(lab, 2) == "\u201cengineering crew\u201d"
    assert cluster_label(lab, 2, quote=False) == "engineering crew"
    assert cluster_label(lab, 0, with_id=True) == "\u201c1st\u201d (0)"
    assert cluster_label({}, 4) == "cluster 4"
    assert cluster_label({}, 4, unit="segment") == "segment 4"
    assert cluster_label(lab, 7) == "cluster 7"  # an id beyond the names
    assert cluster_label({}, -1) == "noise"


def test_the_console_names_failed_data_checks_as_the_report_counts_them():
    """The report said "Data checks failed 1 / 29" and the console said nothing of it."""
    from fairaudit.report.summary import caveat_lines

    checks = [{"name": "group_min_cell[relig|occ]", "success": False},
              {"name": "no_nulls[sex]", "success": True},
              {"name": "sensitive_names_distinct[sex]", "success": False,
               "observed": "'f' and 'F' differ only in case"}]
    lines = caveat_lines({"checks": checks})
    assert "warning: 'f' and 'F' differ only in case" in lines
    assert ("warning: 1 data check(s) failed: group_min_cell[relig|occ] (the report's data "
            "checks say why)") in lines
    assert not any("data check" in line for line in caveat_lines({"checks": checks[1:2]}))
