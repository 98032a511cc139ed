"""Which embedded redis-servers run, read from ``/proc`` (for tests that assert none is left behind)."""

from __future__ import annotations

from pathlib import Path


def gone(pid: int) -> bool:
    """True when ``pid`` no longer runs (exited, or a zombie nobody reaped yet)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return True
    return state in ("Z", "X")


def servers_of(data_dir: Path) -> list[int]:
    """Pids of live redis-servers whose command line names ``data_dir``."""
    out = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            cmdline = (proc / "cmdline").read_bytes().decode(errors="replace")
        except OSError:
            continue
        if "redis-server" in cmdline and str(data_dir) in cmdline and not gone(int(proc.name)):
            out.append(int(proc.name))
    return out
