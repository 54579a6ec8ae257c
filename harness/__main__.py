import sys

from harness.seed import ensure_hash_seed

ensure_hash_seed()  # before the imports below: re-executing after them would pay for them twice

from muster_exact.core.optional import Extra, installed  # noqa: E402

# The harness's libraries come with the harness extra: without one, a line naming the extra
# rather than a traceback ending in "No module named 'hydra'" (found, not imported: no cost).
_NEEDED = ("hydra", "omegaconf", "pandas", "datasets", "openai", "nltk")
_missing = [name for name in _NEEDED if not installed(name)]
if _missing:
    sys.exit(f"python -m harness: {', '.join(_missing)} not installed; run {Extra('harness')}")

from harness.app import main  # noqa: E402

main()
