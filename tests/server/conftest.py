from __future__ import annotations

import pytest

from tests.helpers.service import running_service


@pytest.fixture(scope="session")
def service_url():
    """One real `coderl serve` (full isolation, 2 slots) for the server suite."""
    with running_service(slots=2, queue=64) as url:
        yield url
