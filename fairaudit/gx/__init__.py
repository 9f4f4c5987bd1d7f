"""The Great Expectations integration: input checks of a run (:mod:`fairaudit.gx.checks`) and
fairness expectations for users' own suites (:mod:`fairaudit.gx.expectations`). GX loads only
when these modules are used."""
