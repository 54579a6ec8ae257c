"""Work kept between builds: what was computed once for a text is not computed again.

Takes texts and their analyses; gives the vector cache keyed by model and SHA-256 of the text
(:mod:`.vectors`; files made private and in WAL mode by :mod:`.files`; vectors a full disk kept
from being written, held for the process by :mod:`.unwritten`) and the per-text memo a growing
store reuses (:mod:`.memo`).
"""
