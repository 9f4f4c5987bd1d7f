"""Operations on finished audits: gates, comparison with a baseline, history over runs, CSV
export, cluster alignment, and reading saved audit JSON."""
