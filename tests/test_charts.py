"""fairaudit.report.charts: matplotlib -> inline SVG, deterministic, escaped, self-contained."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from fairaudit.report import charts

XSS = "<script>alert(1)</script>"


def _all_charts() -> dict[str, str]:
    return {
        "composition": charts.composition_bars(
            ["population", "cluster 0", "cluster 1"],
            ["Female", "Male", XSS],
            [[0.3, 0.6, 0.1], [0.2, None, 0.1], [0.5, 0.4, 0.1]],
            title="Group share",
            reference="population",
        ),
        "grouped": charts.grouped_bars(
            ["0", "1"], {"F": [0.1, None], "M": [0.2, 0.3]}, percent=True, title="g"
        ),
        "heatmap": charts.heatmap(
            [[0.5, None], [1.0, 0.1]], ["a", XSS], ["cluster 0", "cluster 1"], title="hm"
        ),
        "histogram": charts.histogram([1, 2, 2, 3, None], markers={"threshold": 2}, title="h"),
        "scatter": charts.scatter(
            list(range(300)), [i % 7 for i in range(300)], [i % 3 - 1 for i in range(300)]
        ),
        "hbar": charts.hbar(
            ["a", "b", "c"],
            [0.3, None, 0.5],
            errors=[[0.2, 0.4], None, [0.45, 0.55]],
            reference=0.25,
            reference_label="threshold",
            title="bars",
        ),
    }


@pytest.fixture(scope="module")
def rendered() -> dict[str, str]:
    return _all_charts()


def test_inline_svg_without_prolog_metadata_or_urls(rendered):
    for name, svg in rendered.items():
        assert svg.startswith("<svg"), name
        assert svg.rstrip().endswith("</svg>"), name
        assert "<?xml" not in svg and "<!DOCTYPE" not in svg, name
        assert "<metadata" not in svg, name
        assert "http://" not in svg and "https://" not in svg, name
        assert "<script" not in svg, name
        assert svg.count("<svg") == 1, name


def test_same_data_gives_same_svg(rendered):
    again = _all_charts()
    for name in rendered:
        assert again[name] == rendered[name], name


def test_ids_are_prefixed_per_chart_and_references_resolve(rendered):
    seen: dict[str, str] = {}
    for name, svg in rendered.items():
        ids = re.findall(r'\bid="([^"]+)"', svg)
        assert len(ids) == len(set(ids)), name
        for ref in re.findall(r'(?:url\(#|href="#)([^)"]+)', svg):
            assert ref in ids, (name, ref)
        for i in ids:
            assert i not in seen, f"id {i} of {name} also in {seen.get(i)}"
            seen[i] = name


def test_text_from_data_is_escaped(rendered):
    for name in ("composition", "heatmap"):
        svg = rendered[name]
        assert XSS not in svg
        assert "&lt;script&gt;alert(1)&lt;/scrip" in svg  # labels may be shortened


def test_dollar_signs_are_literal_not_mathtext():
    svg = charts.composition_bars(["a"], ["x$y$z"], [[1.0]])
    texts = re.findall(r"<text[^>]*>([^<]*)</text>", svg)
    assert "x$y$z" in texts


def test_missing_values_are_marked_not_zero(rendered):
    assert "unknown" in rendered["composition"]
    assert "n/a" in rendered["heatmap"]
    assert "1 undefined value(s) not shown" in rendered["histogram"]
    assert "undefined" in rendered["hbar"]
    assert "n/a" in rendered["grouped"]


def _points(svg: str) -> int:
    """Markers drawn by scatter collections (``<use>`` inside PathCollection groups)."""
    total = 0
    for m in re.finditer(r'<g id="[^"]*PathCollection_\d+">(.*?)</g>', svg, re.S):
        total += m.group(1).count("<use ")
    return total


def test_scatter_downsamples_with_seeded_rng():
    x = list(range(2000))
    y = [i % 11 for i in x]
    a = charts.scatter(x, y, max_points=150, seed=3, raster_above=10**9)
    b = charts.scatter(x, y, max_points=150, seed=3, raster_above=10**9)
    c = charts.scatter(x, y, max_points=150, seed=4, raster_above=10**9)
    assert a == b
    assert a != c
    assert _points(a) == 150
    assert "150 of 2,000 points" in a
    small = charts.scatter(x[:100], y[:100], max_points=150, raster_above=10**9)
    assert _points(small) == 100
    assert "points (seeded sample)" not in small


def test_scatter_noise_is_grey_and_large_scatters_are_rasterised():
    labels = [-1] * 50 + [0] * 50 + [1] * 50
    svg = charts.scatter(list(range(150)), list(range(150)), labels, raster_above=10**9)
    assert charts.NOISE_COLOR in svg
    assert ">noise<" in svg
    big = charts.scatter(list(range(3000)), list(range(3000)), raster_above=1000)
    assert "data:image/png;base64," in big
    assert _points(big) == 0


def test_scatter_rejects_mismatched_lengths():
    with pytest.raises(ValueError, match="same length"):
        charts.scatter([1, 2], [1])


def test_charts_use_no_pyplot_and_import_matplotlib_lazily():
    code = (
        "import sys\n"
        "import fairaudit.report.charts as c\n"
        "assert 'matplotlib' not in sys.modules, 'imported at module load'\n"
        "c.heatmap([[0.5]], ['a'], ['b'])\n"
        "c.hbar(['a'], [1.0])\n"
        "assert 'matplotlib' in sys.modules\n"
        "assert 'matplotlib.pyplot' not in sys.modules, 'pyplot imported'\n"
        "import matplotlib\n"
        "assert matplotlib.rcParams['svg.hashsalt'] is None, 'global rcParams changed'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)
