"""docs/writing_plugins.md stays true: its auditor and section code run as written (issue 24).

The code blocks of sections 2 and 3 are executed as a plugin module, pass the conformance
checks, and audit a table through a host that registered them, as a third-party plugin would.
"""

from __future__ import annotations

import re
import types

from conftest import ROOT, make_synthetic

from fairaudit.testing import check_component

DOC = ROOT / "docs" / "writing_plugins.md"


def _doc_plugin() -> types.ModuleType:
    text = DOC.read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(.*?)```", text, flags=re.S)
    auditor = next(b for b in blocks if "class RepresentationGap(CountingAuditor)" in b)
    section = next(b for b in blocks if "class RepresentationGapSection(ReportSection)" in b)
    mod = types.ModuleType("writing_plugins_doc_example")
    exec(compile(auditor + "\n" + section, str(DOC), "exec"), mod.__dict__)  # noqa: S102
    return mod


def test_the_documented_plugin_passes_the_conformance_checks():
    mod = _doc_plugin()
    check_component(mod.RepresentationGap)
    check_component(mod.RepresentationGapSection)


def test_the_documented_auditor_runs_in_an_audit():
    from fairaudit.core.build import chain_from_flags
    from fairaudit.core.plugins import Host, make_plugin_manager
    from fairaudit.core.runner import run_chain

    pm = make_plugin_manager(entrypoints=False)
    pm.register(_doc_plugin(), name="doc_example")
    host = Host(pm)
    spec = chain_from_flags(host.registry, sensitive=("sex",), labels="segment",
                            audits=[("representation_gap", {})], bootstrap=20)
    run = run_chain(spec, host, data_path=make_synthetic(n=600, seed=5))
    [r] = run.results_for(auditor="representation_gap")
    assert 0 < r["value"] < 1  # segment 0 is 80% F, the others 20% F: a real gap
