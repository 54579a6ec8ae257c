from harness.seed import ensure_hash_seed

ensure_hash_seed()  # before the imports below: re-executing after them would pay for them twice

from harness.app import main  # noqa: E402

main()
