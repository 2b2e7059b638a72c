"""codex: the promises every client keeps (tests/clients/contract.py)."""

from __future__ import annotations

from contract import check_contract


def test_contract(taosync, home, fleet_file):
    check_contract(taosync, home, fleet_file, "codex", {"model": "fast", "profiles": ["deep"]},
                   reference_off_disk=True)
