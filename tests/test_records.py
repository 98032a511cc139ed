"""The records layer (query records, jobs, keys, owners) holds no web framework: the MCP server and any
other front end use it without Flask."""

from __future__ import annotations

import subprocess
import sys


def test_the_records_package_imports_without_flask():
    code = (
        "import sys\n"
        "import hypermem.records.jobs, hypermem.records.keys, hypermem.records.owners, hypermem.records.queries\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('flask', 'flask_smorest', 'werkzeug')))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
