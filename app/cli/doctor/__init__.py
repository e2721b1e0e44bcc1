"""``localllm doctor``'s checks: probe this computer, judge what was found, show it.

``collect`` runs the probes into a frozen ``Report``; ``findings`` turns it into errors and
warnings; ``render_table`` and ``to_json`` format both. The command lives in
``app.cli.commands.doctor``.
"""

from localllm.app.cli.doctor.collect import collect
from localllm.app.cli.doctor.render import render_table, to_json
from localllm.app.cli.doctor.report import Finding, Report, findings

__all__ = ["Finding", "Report", "collect", "findings", "render_table", "to_json"]
