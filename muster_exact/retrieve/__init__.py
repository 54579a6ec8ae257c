"""Stages 6-8, ordering, selection and assembly: from the channels' proposals to a context.

Takes the channels' ranked proposals and the plan; gives the fused and reranked order
(:mod:`.rerank`), the units kept under the reserved floors (:mod:`.select`), the context in
stored order with the newest version of a fact (:mod:`.assemble`) and the plan's explanation
(:mod:`.explain`).
"""
