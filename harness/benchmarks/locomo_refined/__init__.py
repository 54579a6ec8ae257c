"""LoCoMo-Refined, in one folder: ``adapter.py`` (LoCoMo's conversations, the refined questions,
the strict judge) and ``scorer.py`` (token F1 and BLEU-1, best over the golds, offline)."""
