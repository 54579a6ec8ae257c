"""Stage 1, input: text and records as the later stages read them.

Takes a file, a string or a list of records; gives ordered records (:mod:`.records`, each
checked by the one record rule of :mod:`.fields`), their
serial prefixes (:mod:`.serials`), sentences (:mod:`.sentences`), cl100k token counts
(:mod:`.tokens`), named entities (:mod:`.entities`), fact slots of numbered logs
(:mod:`.slots`) and the lexical analysers BM25 indexes with (:mod:`.lexical`).
"""
