"""FZ-3: a scraping engine's page with no element to parse (REQ-SEC-023, REQ-RUST-003).

`make fuzz SECONDS=30` (2026-12-02) crashed driver_duckduckgo on a 200
text/html answer whose body is only `</html>`: `scrape.read_page` let the
HTML parser's own `Unparseable` out of the driver, where the contract is an
EngineFailure with a class. Both scraping drivers read pages through it. The
crashing input is replayed by tests/properties/test_fuzz_regressions.py
(fuzz/regressions/driver_duckduckgo-7823d626aa0f3b60); this is the readable
case, for both drivers.
"""

from __future__ import annotations

import pytest

from rypsok.core.engines.base import EngineFailure, EngineResponse, FailureClass
from rypsok.core.engines.registry import driver_classes


@pytest.mark.req("REQ-SEC-023", "REQ-RUST-003")
@pytest.mark.parametrize("engine_id", ["duckduckgo", "bing"])
@pytest.mark.parametrize("body", [b"</html>\n", b"<!-- only a comment --></html>"])
def test_a_page_with_nothing_to_parse_is_a_parse_failure(engine_id: str, body: bytes) -> None:
    """REQ-RUST-003: a result page that ends in </html> but holds no element is the
    engine's parse_failure, not an error of the HTML parser."""
    driver = driver_classes()[engine_id]()
    response = EngineResponse(200, {"content-type": "text/html; charset=utf-8"}, body)
    with pytest.raises(EngineFailure) as failure:
        driver.parse(response)
    assert failure.value.failure_class is FailureClass.PARSE_FAILURE
