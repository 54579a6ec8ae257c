"""The contracts every stage uses, and nothing of the pipeline itself.

Takes nothing from the other packages; gives the typed errors (:mod:`.errors`), the input
bounds (:mod:`.limits`), optional imports with one install hint (:mod:`.optional`), progress
lines (:mod:`.progress`), the name registries (:mod:`.registry`), the quiet closed pipe
(:mod:`.pipes`) and the files shipped beside the code (:mod:`.shipped`).
"""
