"""Harness stages: contexts (retrieve and hash), merge (join shards), tables (score tables)."""
