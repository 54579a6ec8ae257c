"""``muster verify cuts`` and ``muster verify contexts``: the pinned manifests checked."""

from __future__ import annotations

import argparse
from pathlib import Path

from muster_exact import verify


def _cmd_verify_cuts(args: argparse.Namespace) -> int:
    manifest_path = Path(args.manifest) if args.manifest else verify.default_manifest()
    manifest = verify.load_manifest(manifest_path)
    verify.require_data_root(Path(args.data))  # an error is one line, before any verdict
    print(f"verify cuts: {args.data} against {manifest_path}")
    print(verify.HEADER)
    failed = total = 0
    for verdict in verify.verify_cuts(Path(args.data), manifest):
        total += 1
        failed += not verdict.ok
        print(verify.format_row(verdict), flush=True)
    print(f"{total - failed} of {total} stores OK" + (f", {failed} FAIL" if failed else ""))
    return 1 if failed else 0


def _cmd_verify_contexts(args: argparse.Namespace) -> int:
    from muster_exact.verify import contexts as verify_contexts

    root = Path(args.manifests) if args.manifests else verify.manifest_dir()
    # Every manifest and the data they need are checked first: an error is one line, before any verdict.
    paths = verify_contexts.manifest_paths(root, args.preset)
    manifests = {path: verify_contexts.load(path) for path in paths}
    verify_contexts.require_data(Path(args.data), {m["benchmark"] for m in manifests.values()})
    failed = False
    for path, manifest in manifests.items():
        result = verify_contexts.check(path, Path(args.data), manifest, progress=not args.quiet)
        ok = not result.differing and not result.missing
        failed |= not ok
        print(
            f"{result.name}: {result.identical} of {result.total} identical" + ("" if ok else "  FAIL"),
            flush=True,
        )
        for qid in result.differing[:10]:
            print(f"  differs: {qid}")
        for qid in result.missing[:10]:
            print(f"  missing from the data: {qid}")
    return 1 if failed else 0
