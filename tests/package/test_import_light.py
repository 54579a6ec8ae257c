from __future__ import annotations

import subprocess
import sys

import pytest

pytestmark = pytest.mark.fast  # no model, no harness run: `make test-fast`

HEAVY = ("torch", "transformers", "sentence_transformers", "FlagEmbedding", "numpy", "hydra")


@pytest.mark.parametrize("package", ["muster_exact", "muster"])
def test_import_and_derive_load_no_heavy_module(package: str) -> None:
    code = (
        f"import sys, {package}\n"
        f"{package}.derive('1. The CEO of Acme is Ann Lee.\\n2. The CEO of Acme is Bo Li.')\n"
        f"print(','.join(m for m in {HEAVY!r} if m in sys.modules))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == ""
