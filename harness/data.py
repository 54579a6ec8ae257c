"""The data root and its SHA-256 manifest.

Benchmark files are read in place from the data root (``$MUSTER_DATA``, else
``../shared/data``) and each is checked against ``manifests/data.json``
before use: a missing or changed file is one clear error naming the path and
the SHA-256 it should have. Nothing is copied into the repository.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from muster_exact.core.errors import DataError, ManifestError


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


@dataclass
class DataRoot:
    root: Path
    manifest: dict[str, Any]
    checked: dict[str, str] = field(default_factory=dict)  # relative path -> SHA-256, for the run record

    @classmethod
    def open(cls, root: str | Path, manifest_path: str | Path) -> DataRoot:
        root = Path(root)
        if not root.is_dir():
            raise DataError(
                f"data root {root} does not exist; set paths.data_root=DIR or $MUSTER_DATA "
                "(the benchmark files, e.g. ../shared/data)"
            )
        try:
            manifest = json.loads(Path(manifest_path).read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as exc:
            raise ManifestError(f"cannot read data manifest {manifest_path}: {exc}") from None
        return cls(root, manifest)

    def path(self, relative: str) -> Path:
        """The checked path of a benchmark file (SHA-256 against the manifest)."""
        expected = self.manifest.get("files", {}).get(relative, {}).get("sha256")
        if expected is None:
            raise ManifestError(
                f"{relative} is not in the data manifest; add its SHA-256 to manifests/data.json"
            )
        path = self.root / relative
        if relative not in self.checked:
            if not path.is_file():
                raise DataError(f"missing data file {path}: expected a file with SHA-256 {expected}")
            actual = sha256_file(path)
            if actual != expected:
                raise DataError(
                    f"data file {path} has changed: SHA-256 {actual}, expected {expected}; "
                    "restore the pinned file"
                )
            self.checked[relative] = actual
        return path

    def exists(self, relative: str) -> bool:
        return (self.root / relative).is_file()
