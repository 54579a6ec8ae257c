"""Pin the SHA-256 of every preset file in manifests/presets.json (run on purpose)."""

from __future__ import annotations

import json
from pathlib import Path

from muster_exact.memory import presets

MANIFEST = Path(__file__).resolve().parent.parent / "manifests" / "presets.json"


def main() -> None:
    pinned = {name: presets.sha256(name) for name in presets.names()}
    MANIFEST.write_text(
        json.dumps({"schema_version": 1, "presets": pinned}, indent=2) + "\n", encoding="utf-8"
    )
    print(f"pinned {len(pinned)} presets in {MANIFEST}")


if __name__ == "__main__":
    main()
