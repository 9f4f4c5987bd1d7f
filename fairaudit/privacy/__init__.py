"""Disclosure control of published releases (``--publish``, docs/privacy.md): OpenDP
measurements (:mod:`fairaudit.privacy.dp`), the count cubes and the published document
(:mod:`fairaudit.privacy.cubes`, :mod:`fairaudit.privacy.publish`), and the accounting around
them: the data source, the same people and the same release, the budget
(:mod:`fairaudit.privacy.accounting`), the data's fingerprint and sketch
(:mod:`fairaudit.privacy.fingerprint`), the privacy ledger (:mod:`fairaudit.privacy.ledger`),
and no exact count on the side of a published run (:mod:`fairaudit.privacy.redact`)."""
