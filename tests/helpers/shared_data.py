"""The workplace's reference rows (`../shared/data` beside the checkout), which the fidelity and
builder tests judge for real. A clone elsewhere has none: those tests skip, naming the folder; under
CODERL_TEST_ALL=1 (CI, which runs beside it) they fail naming it (tests/helpers/require.py)."""

from __future__ import annotations

from pathlib import Path

from tests.helpers.require import needs

SHARED = Path(__file__).resolve().parents[2].parent / "shared" / "data"

needs_shared_data = needs(SHARED.is_dir(), f"{SHARED} not present (the reference rows beside the checkout)")
