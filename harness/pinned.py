"""Third-party scoring files and prompt templates, fetched at pinned commits and checked.

The benchmarks' own prompts and scorers are other people's code: this
repository never holds a copy. ``manifests/scorers.json`` pins each file by
repository, commit, path and SHA-256; at run time the file is read from

1. a local mirror directory (``paths.scorers_mirror``, laid out
   ``<repo>/<commit>/<path>``: how an offline machine is served), else
2. the fetch cache (``$MUSTER_HOME/scorers``, the same layout), else
3. the network (``<base>/<repo>/<commit>/<path>``, GitHub's raw files by
   default), then kept in the fetch cache.

Every byte is checked against the pinned SHA-256 before use; a mismatch or a
file that cannot be had anywhere is one clear :class:`PinnedFileError`.

    python -m harness.pinned            # fetch every pinned file into the cache (needs network)
    python -m harness.pinned --check    # which pinned files this machine can serve, offline
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from muster_exact.core.errors import ManifestError, MusterError

if TYPE_CHECKING:
    from omegaconf import DictConfig

DEFAULT_BASE_URL = "https://raw.githubusercontent.com"
MANIFEST = "scorers.json"


class PinnedFileError(MusterError):
    """A pinned third-party file is missing, unreachable or not the pinned bytes."""


@dataclass(frozen=True)
class Pin:
    name: str
    repo: str
    commit: str
    path: str
    sha256: str

    @property
    def relative(self) -> Path:
        return Path(self.repo) / self.commit / self.path

    def describe(self) -> dict[str, str]:
        return {"repo": self.repo, "commit": self.commit, "path": self.path, "sha256": self.sha256}


def load_manifest(path: Path) -> dict[str, Pin]:
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
        return {name: Pin(name=name, **entry) for name, entry in raw["files"].items()}
    except FileNotFoundError:
        raise ManifestError(
            f"no scorer manifest at {path}; set paths.manifests to the repo's manifests/"
        ) from None
    except (json.JSONDecodeError, KeyError, TypeError) as exc:
        raise ManifestError(f"{path}: not a scorer manifest ({exc})") from None


def default_cache() -> Path:
    home = os.environ.get("MUSTER_HOME") or str(Path.home() / ".cache" / "muster")
    return Path(home) / "scorers"


class PinnedFiles:
    """Serves pinned files by name, each checked once; remembers what it served for the run record."""

    def __init__(
        self,
        manifest: Path,
        mirror: Path | None = None,
        cache: Path | None = None,
        base_url: str | None = DEFAULT_BASE_URL,
    ) -> None:
        self.manifest_path = manifest
        self._pins: dict[str, Pin] | None = None  # read on first use: runs without official prompts need none
        self.mirror = mirror
        self.cache = cache or default_cache()
        self.base_url = base_url  # None: never touch the network
        self.used: dict[str, dict[str, str]] = {}
        self._bytes: dict[str, bytes] = {}

    @property
    def pins(self) -> dict[str, Pin]:
        if self._pins is None:
            self._pins = load_manifest(self.manifest_path)
        return self._pins

    def pin(self, name: str) -> Pin:
        if name not in self.pins:
            raise PinnedFileError(
                f"{name!r} is not pinned in {self.manifest_path}; known: {', '.join(self.pins)}"
            )
        return self.pins[name]

    def read(self, name: str) -> bytes:
        if name in self._bytes:
            return self._bytes[name]
        pin = self.pin(name)
        data = self._local(pin) or self._fetch(pin)
        self._bytes[name] = data
        self.used[name] = pin.describe()
        return data

    def text(self, name: str) -> str:
        return self.read(name).decode("utf-8")

    def _local(self, pin: Pin) -> bytes | None:
        for root in (self.mirror, self.cache):
            if root is None:
                continue
            path = root / pin.relative
            if path.is_file():
                return _checked(pin, path.read_bytes(), str(path))
        return None

    def _fetch(self, pin: Pin) -> bytes:
        if not self.base_url:
            raise PinnedFileError(
                f"{pin.name} ({pin.repo}@{pin.commit[:8]}:{pin.path}) is not in the mirror "
                f"{self.mirror} or the cache {self.cache}, and fetching is off; put the file at "
                f"<mirror>/{pin.relative} or run `python -m harness.pinned` on a machine with network"
            )
        url = f"{self.base_url.rstrip('/')}/{pin.repo}/{pin.commit}/{pin.path}"
        try:
            with urllib.request.urlopen(url, timeout=30) as response:
                data: bytes = response.read()
        except (urllib.error.URLError, OSError) as exc:
            raise PinnedFileError(
                f"cannot fetch {pin.name} from {url} ({exc}); offline, serve it from a mirror: "
                f"paths.scorers_mirror=DIR with the file at DIR/{pin.relative}"
            ) from None
        data = _checked(pin, data, url)
        target = self.cache / pin.relative
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_name(target.name + ".tmp")
        tmp.write_bytes(data)
        tmp.replace(target)
        return data


def _checked(pin: Pin, data: bytes, where: str) -> bytes:
    got = hashlib.sha256(data).hexdigest()
    if got != pin.sha256:
        raise PinnedFileError(
            f"{pin.name} from {where} has SHA-256 {got}, but {pin.repo}@{pin.commit[:8]}:{pin.path} is "
            f"pinned at {pin.sha256}; remove that file (a wrong copy or another commit) and fetch again"
        )
    return data


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m harness.pinned", description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--manifest", type=Path, default=Path(__file__).resolve().parent.parent / "manifests" / MANIFEST
    )
    parser.add_argument("--mirror", type=Path, default=None)
    parser.add_argument("--check", action="store_true", help="only report what is served locally; no network")
    args = parser.parse_args(argv)
    files = PinnedFiles(args.manifest, args.mirror, base_url=None if args.check else DEFAULT_BASE_URL)
    missing = 0
    for name in files.pins:
        try:
            files.read(name)
            print(f"ok       {name}")
        except PinnedFileError as exc:
            missing += 1
            print(f"missing  {name}: {exc}", file=sys.stderr)
    print(f"{len(files.pins) - missing} of {len(files.pins)} pinned files available")
    return 1 if missing else 0


def pinned_files(cfg: DictConfig) -> PinnedFiles:
    """The pinned files a run's config points at (its manifests, mirror and base URL)."""
    mirror = cfg.paths.scorers_mirror
    return PinnedFiles(
        Path(cfg.paths.manifests) / MANIFEST,
        mirror=Path(mirror) if mirror else None,
        base_url=cfg.paths.scorers_url or None,
    )


def describe(files: PinnedFiles | None) -> dict[str, Any]:
    """The run record's entry: every pinned file used, with its SHA-256."""
    return {} if files is None else dict(sorted(files.used.items()))


if __name__ == "__main__":
    sys.exit(main())
