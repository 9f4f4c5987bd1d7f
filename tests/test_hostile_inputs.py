"""Issue 35, input paths and resource bounds.

Families:

* an existing file is never a pattern: a name with ``[``, ``*`` or ``?`` beside the files the
  pattern would match is audited as itself (rows and JSON path), for CSV and Parquet;
* data that is not a regular file (FIFO with or without a writer, a character device) is
  refused at once; chain TOML and audit JSON are read with a bound (``/dev/zero`` refused, a
  pipe read up to the limit, a FIFO without a writer is empty), never a hang;
* a CSV header read with a bound: a file without a line end (a sparse file), a cell over the
  name limit, a quoted name with doubled quotes;
* memory estimated before the bootstrap, the estimate an upper bound of the measured peak, and
  exit 2 naming ``--bootstrap`` and ``--max-memory`` above the bound.
"""

from __future__ import annotations

import json
import os
import threading
import tracemalloc

import numpy as np
import polars as pl
import pytest
from conftest import make_synthetic


@pytest.mark.parametrize("name, other", [("sel[2].csv", "sel2.csv"), ("a*b.parquet", "axb.parquet"),
                                         ("q?.csv", "qa.csv"), ("[ab].parquet", "a.parquet")])
def test_an_existing_file_is_never_a_pattern(run_cli, tmp_path, name, other):
    big, small = make_synthetic(600), make_synthetic(100, seed=1)
    for df, f in ((big, name), (small, other)):
        (df.write_csv if f.endswith(".csv") else df.write_parquet)(tmp_path / f)
    res = run_cli("audit", name, "-s", "sex", "--labels", "segment", "--audit", "balance",
                  "--bootstrap", "0", "-q", "-o", "r.html")
    assert res.exit_code == 0, res.output
    doc = json.loads((tmp_path / "r.json").read_text())
    assert doc["input"]["rows"] == 600 and doc["input"]["path"] == name
    # the literal file is protected as an input too: no output over it
    res = run_cli("audit", name, "-s", "sex", "--labels", "segment", "-q", "--json", name)
    assert res.exit_code == 2 and "is the input file" in res.output


def test_a_pattern_that_names_no_file_is_still_a_glob(run_cli, tmp_path):
    for i in range(2):
        make_synthetic(300, seed=i).write_parquet(tmp_path / f"part-{i}.parquet")
    res = run_cli("audit", "part-*.parquet", "-s", "sex", "--labels", "segment", "--audit",
                  "balance", "--bootstrap", "0", "-q", "-o", "r.html")
    assert res.exit_code == 0, res.output
    assert json.loads((tmp_path / "r.json").read_text())["input"]["rows"] == 600


def _fifo(tmp_path, name="fifo"):
    path = tmp_path / name
    os.mkfifo(path)
    return path


@pytest.mark.parametrize("how", ["file", "device", "in a folder", "matched by a glob",
                                 "dangling link in a folder"])
def test_data_that_is_not_a_regular_file_is_refused_without_waiting(run_cli, tmp_path, how):
    """Given as the data, inside a data folder or matched by a pattern: refused, named (in a
    folder it was silently left out, a part of the data audited without a word)."""
    if how == "device":
        data, named, text = "/dev/zero", "/dev/zero", "not a regular file"
    elif how == "file":
        data = named = str(_fifo(tmp_path, "data.csv"))
        text = "not a regular file"
    else:
        (tmp_path / "d").mkdir()
        make_synthetic(300).write_parquet(tmp_path / "d" / "part-0.parquet")
        if how.startswith("dangling"):
            (tmp_path / "d" / "part-1.parquet").symlink_to(tmp_path / "gone.parquet")
            text = "cannot be read"
        else:
            _fifo(tmp_path / "d", "part-1.parquet")
            text = "not a regular file"
        data = "d/part-*.parquet" if how.endswith("glob") else "d"
        named = "part-1.parquet"
    res = run_cli("audit", data, "-s", "sex", "--labels", "segment", "-q")
    assert res.exit_code == 2, res.output
    assert text in res.output and named in res.output, res.output


@pytest.mark.parametrize("command", ["validate", "render", "compare", "export", "history",
                                     "--chain", "--baseline"])
def test_documents_are_read_with_a_bound(run_cli, tmp_path, command):
    fifo = _fifo(tmp_path)
    if command.startswith("--"):
        make_synthetic(100).write_parquet(tmp_path / "d.parquet")

    def args(path):
        audit = ["audit", "d.parquet", "-s", "sex", "--labels", "segment", "--bootstrap", "0",
                 "-o", "o.html"]
        return {"validate": ["validate", path], "render": ["render", path, "-o", "o.html"],
                "compare": ["compare", path, path], "export": ["export", path, "--csv", "o.csv"],
                "history": ["history", path], "--chain": [*audit, "--chain", path],
                "--baseline": [*audit, "--baseline", path]}[command]

    res = run_cli(*args("/dev/zero"))  # a device: refused before a byte is read
    assert res.exit_code == 2 and "/dev/zero" in res.output, res.output
    assert "character device" in res.output or "no such file" not in res.output
    res = run_cli(*args(str(fifo)))  # a FIFO without a writer: refused, no hang, and never
    assert res.exit_code == 2 and "internal error" not in res.output, res.output  # taken for
    assert str(fifo.name) in res.output, res.output  # an empty chain (--chain used to run)
    assert not (tmp_path / "o.html").exists()


def test_standard_input_as_the_data_is_refused_with_what_to_do(run_cli, tmp_path):
    res = run_cli("audit", "-", "--sensitive", "sex", "--out", "o.html", "--json", "o.json")
    assert res.exit_code == 2, res.output
    assert "standard input" in res.output and "save the stream to a file" in res.output
    assert not (tmp_path / "o.html").exists() and not (tmp_path / "o.json").exists()
    (tmp_path / "-").write_text("sex,x\nf,1\nm,2\n")  # a file called "-" is a file
    res = run_cli("audit", "-", "--sensitive", "sex", "--out", "o.html")
    assert "standard input" not in res.output, res.output


def test_a_pipe_is_read_up_to_the_bound(run_cli, tmp_path):
    """``fairaudit validate <(generate-chain)``: the shell gives a pipe; it is read, and more
    than the limit is refused without reading on."""
    from fairaudit.core.limits import MAX_TOML_BYTES

    chain = '[data]\nsensitive = ["sex"]\nlabels = "segment"\n[[audit]]\nuse = "balance"\n'
    for text, code in ((chain, 0), ("#" * (MAX_TOML_BYTES + 10), 2)):
        r, w = os.pipe()
        writer = threading.Thread(target=_feed, args=(w, text.encode()), daemon=True)
        writer.start()
        res = run_cli("validate", f"/proc/self/fd/{r}")
        os.close(r)
        writer.join(timeout=30)
        assert res.exit_code == code, res.output
        if code:
            assert "more than" in res.output


def _feed(fd: int, data: bytes) -> None:
    try:
        os.write(fd, data)
    except BrokenPipeError:  # the reader stopped at the bound
        pass
    finally:
        os.close(fd)


def test_a_csv_without_a_line_end_is_refused_from_its_first_bytes(run_cli, tmp_path):
    """A sparse 20 MB file named .csv (issue 35: 2 GB took 4.2 GB and exit 3): refused after
    reading the header's bound, not the whole file."""
    from fairaudit.core.csv_checks import MAX_HEADER_CHARS

    path = tmp_path / "sparse.csv"
    with open(path, "wb") as fh:
        fh.truncate(MAX_HEADER_CHARS + 4 * 1024 * 1024)
    res = run_cli("audit", "sparse.csv", "-s", "sex", "--labels", "segment", "-q")
    assert res.exit_code == 2 and "hold no line end" in res.output, res.output
    from fairaudit.core.csv_checks import csv_header
    from fairaudit.errors import InputError

    tracemalloc.start()
    with pytest.raises(InputError):
        csv_header(path, ",")
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 3 * MAX_HEADER_CHARS  # the bound, not the file (a str of 1-byte characters)


@pytest.mark.parametrize("header, sensitive, text", [
    ("a" * 131_073 + ",sex,segment", "sex", "characters long"),  # issue 35: exit 3
    ('"a""b",sex,segment', 'a"b', None),                          # read as a"b, not a""b
])
def test_csv_header_cells(run_cli, tmp_path, header, sensitive, text):
    body = "\n".join(f"{i},{'FM'[i % 2]},{i % 3}" for i in range(60))
    (tmp_path / "h.csv").write_text(header + "\n" + body + "\n")
    res = run_cli("audit", "h.csv", "-s", sensitive, "--labels", "segment", "--audit", "balance",
                  "--bootstrap", "0", "-q", "-o", "r.html")
    if text is None:
        assert res.exit_code == 0, res.output
        assert 'a"b' in json.loads((tmp_path / "r.json").read_text())["input"]["sensitive"]
        res = run_cli("audit", "h.csv", "-s", 'a"bx', "--labels", "segment", "-q")
        assert "did you mean 'a\"b'" in res.output  # suggested as it is written
    else:
        assert res.exit_code == 2 and text in res.output, res.output


_ROWS = "".join(f"{'FM'[i % 2]},{i % 3}\n" for i in range(40))


@pytest.mark.parametrize("body, code, text", [
    ('sex,segment\n"M,1\n' + _ROWS, 2, "the row runs from line 2"),        # an unclosed quote
    (_ROWS.join(["sex,segment\n", '"M,1\n']), 2, "a quote opened on that line"),  # on the last
    ("sex,segment\r\nM,1\rF,2\r\n" + _ROWS, 2, "carriage return (\\r) alone"),  # was exit 3
    ("sex,segment\rM,1\rF,2\r", 2, "header line cannot be read"),           # old Mac file
    ('sex,segment\r\n"M\r\nX",1\r\n' + _ROWS.replace("\n", "\r\n"), 0, None),  # quoted line end
    ('sex,segment\n"F ""the first""",1\n' + _ROWS, 0, None),                 # quotes in quotes
])
def test_csv_line_ends_and_quotes(run_cli, tmp_path, body, code, text):
    """Line ends and quotes polars reads otherwise than Python's csv (issue 35: an unclosed
    quote and a lone carriage return were polars' ComputeError at collect time, exit 3)."""
    (tmp_path / "q.csv").write_bytes(body.encode())
    res = run_cli("audit", "q.csv", "-s", "sex", "--labels", "segment", "--audit", "balance",
                  "--bootstrap", "0", "-q", "-o", "r.html")
    assert res.exit_code == code, res.output
    assert text is None or ("q.csv" in res.output and text in res.output), res.output


def test_polars_failing_on_a_csv_at_collect_time_is_an_input_error(tmp_path):
    """What the checks before reading do not know still names the file, exit 2 (not 3)."""
    import polars as pl

    from fairaudit.core.io import csv_read_error
    from fairaudit.errors import InputError

    (tmp_path / "a.csv").write_text("x\n1\n")
    make_synthetic(20).write_parquet(tmp_path / "a.parquet")
    exc = pl.exceptions.ComputeError("found more fields than defined in 'Schema'\n\nConsider")
    err = csv_read_error(exc, str(tmp_path / "a.csv"))
    assert isinstance(err, InputError) and "a.csv: cannot be read as CSV: found more" in str(err)
    assert csv_read_error(exc, str(tmp_path / "a.parquet")) is None  # not a CSV
    assert csv_read_error(pl.exceptions.ComputeError("division"), str(tmp_path / "a.csv")) is None
    assert csv_read_error(exc, pl.DataFrame()) is None  # an in-memory table: a bug, exit 3


def test_a_long_data_cell_is_data(run_cli, tmp_path):
    """csv's 131,072-character field limit is no error for a text cell."""
    rows = [f"{'x' * 200_000 if i == 3 else 'y'},{'FM'[i % 2]},{i % 3}" for i in range(60)]
    (tmp_path / "c.csv").write_text("note,sex,segment\n" + "\n".join(rows) + "\n")
    res = run_cli("audit", "c.csv", "-s", "sex", "--labels", "segment", "--audit", "balance",
                  "--bootstrap", "0", "-q", "-o", "r.html")
    assert res.exit_code == 0, res.output


# ------------------------------------------------------------------------------- memory bounds
def _joint(groups: int, clusters: int, n: int, seed: int):
    from fairaudit.core.contingency import joint_from_frame

    rng = np.random.default_rng(seed)
    frame = pl.DataFrame({"g": rng.integers(0, groups, n).astype(str),
                          "c": rng.integers(0, clusters, n)})
    return joint_from_frame(frame, label="c", sensitive=("g",))


@pytest.mark.parametrize("groups, clusters, n_boot", [(40, 3, 100), (8, 12, 100), (2, 2, 500),
                                                     (1500, 4, 20)])
def test_the_bootstrap_memory_estimate_bounds_the_measured_peak(groups, clusters, n_boot):
    """The estimate is a promise: at least the peak that tracemalloc measures (numpy's arrays
    are traced) while the default counting auditors bootstrap the table, sharing the
    replicates as a run does."""
    from fairaudit_builtins.auditors import BalanceAuditor, CapacityAuditor, DistributionAuditor

    from fairaudit.core.contingency import BootstrapReplicates
    from fairaudit.core.counting_audit import run_counting_auditor
    from fairaudit.core.limits import bootstrap_bytes

    joint = _joint(groups, clusters, groups * 30, seed=groups)
    estimate = bootstrap_bytes(joint, n_boot, 10)[0]
    tracemalloc.start()
    tracemalloc.reset_peak()
    base = tracemalloc.get_traced_memory()[0]
    boot = BootstrapReplicates.per_attribute(joint, n_boot, 0, "c")
    for auditor in (BalanceAuditor(), DistributionAuditor(), CapacityAuditor()):
        run_counting_auditor(auditor, "c", joint, joint.tables(), boot, min_cell=10, level=0.95)
    peak = tracemalloc.get_traced_memory()[1] - base
    tracemalloc.stop()
    assert peak <= estimate, (peak, estimate)
    assert estimate <= 40 * peak + 32 * 1024**2  # an upper bound, not a wild one


def test_a_bootstrap_over_the_bound_is_refused_before_the_work(run_cli, tmp_path):
    rng = np.random.default_rng(0)
    n = 40_000
    pl.DataFrame({"g": rng.integers(0, 2_000, n).astype(str), "sex": rng.choice(["F", "M"], n),
                  "segment": rng.integers(0, 4, n)}).write_parquet(tmp_path / "many.parquet")
    res = run_cli("audit", "many.parquet", "-s", "g", "--labels", "segment", "--audit", "balance",
                  "--bootstrap", "10000", "--max-memory", "64M", "-q", "-o", "r.html")
    assert res.exit_code == 2, res.output
    for text in ("--bootstrap 10,000", "would fit", "--max-memory", "'g'"):
        assert text in res.output, res.output
    assert not (tmp_path / "r.json").exists()
    fits = int(res.output.split("about ")[-1].split(" would fit")[0].replace(",", ""))
    ok = run_cli("audit", "many.parquet", "-s", "g", "--labels", "segment", "--audit", "balance",
                 "--bootstrap", str(min(fits, 50)), "--max-memory", "64M", "-q", "-o", "r.html")
    assert ok.exit_code == 0, ok.output


def test_in_memory_rows_over_the_bound_are_refused_before_they_are_read(run_cli, tmp_path):
    rng = np.random.default_rng(0)
    n = 60_000
    pl.DataFrame({"x1": rng.normal(size=n), "x2": rng.normal(size=n),
                  "sex": rng.choice(["F", "M"], n)}).write_parquet(tmp_path / "wide.parquet")
    res = run_cli("audit", "wide.parquet", "-s", "sex", "--cluster", "kmeans:n_clusters=2",
                  "--sample", "50000", "--max-memory", "1M", "--bootstrap", "0", "-q")
    assert res.exit_code == 2, res.output
    assert "50,000 rows held in memory" in res.output and "--sample 12500" in res.output


@pytest.mark.parametrize("value, ok", [("16G", True), ("512 MiB", True), (str(2**30), True),
                                       ("1k", False), ("lots", False), ("-3G", False)])
def test_max_memory_values(value, ok):
    from fairaudit.core.params import check
    from fairaudit.errors import ConfigError

    if ok:
        assert check("max_memory", value, "cli") >= 1024**2
    else:
        with pytest.raises(ConfigError, match="--max-memory"):
            check("max_memory", value, "cli")
