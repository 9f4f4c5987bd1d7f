"""Disclosure control of published releases (``--publish``): OpenDP measurements
(:mod:`fairaudit.privacy.dp`), the published document (:mod:`fairaudit.privacy.publish`) and the
privacy ledger (:mod:`fairaudit.privacy.ledger`)."""
