"""How many examples a proxy property test draws: its own count, or more when asked.

CI runs each test with the count written beside it. PROPERTY_EXAMPLES=N raises
every such count to at least N, for a longer search on a developer's machine
(docs/testing.md, "Longer random runs"); these tests draw fresh random examples
on every run already.
"""

from __future__ import annotations

import os


def examples(default: int) -> int:
    raw = os.environ.get("PROPERTY_EXAMPLES", "").strip()
    if not raw:
        return default
    try:
        wanted = int(raw)
    except ValueError:
        raise ValueError(f"PROPERTY_EXAMPLES={raw!r} is not a whole number; set it to the examples per "
                         "property test you want (e.g. 20000), or unset it for the default counts") from None
    return max(default, wanted)
