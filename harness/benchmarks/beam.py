"""BEAM (mohammadtavakoli78/BEAM): chats at 100K / 500K / 1M / 10M tokens, 20 questions each.

``chat_trunecated.json`` (sic) wins over ``chat.json`` as in the official loader;
a conversation whose chat is not in the data root is skipped and counted.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator

from harness.config import BenchmarkConfig
from harness.data import DataRoot
from muster_exact.corpora import Store, beam_chat_file, beam_stores

log = logging.getLogger(__name__)


class BEAM:
    name = "beam"

    def stores(self, data: DataRoot, config: BenchmarkConfig) -> Iterator[Store]:
        scales = config.scales or ["100K"]
        for scale in scales:
            scale_dir = data.root / "beam" / scale
            if not scale_dir.is_dir():
                log.warning("BEAM scale %s is not under %s", scale, data.root / "beam")
                continue
            skipped = 0
            for conversation in sorted(p.name for p in scale_dir.iterdir() if p.is_dir()):
                chat = beam_chat_file(scale_dir / conversation)
                if chat is None:
                    skipped += 1
                    continue
                # Check the files this conversation reads against the manifest.
                data.path(f"beam/{scale}/{conversation}/{chat.name}")
                data.path(f"beam/{scale}/{conversation}/probing_questions.json")
            if skipped:
                log.warning("BEAM %s: %d conversations have no chat here and are skipped", scale, skipped)
        yield from beam_stores(data.root / "beam", scales)
