"""ONNX Runtime runs of a sentence-transformers model: exported from its local weights once, and
optionally quantised to int8, under $MUSTER_HOME/onnx."""

from __future__ import annotations

import hashlib
import logging
import os
import shutil
import tempfile
from pathlib import Path

from muster_exact.core import optional
from muster_exact.core.errors import ResourceMissing
from muster_exact.models.hub import resolve
from muster_exact.models.profiles import INSTALL_ONNX, ModelRef, require

log = logging.getLogger(__name__)

# Dynamic int8 quantisation for the instructions every x86-64 CPU of the last decade has.
QUANTISATION = "avx2"


INT8_SUFFIX = f"int8_{QUANTISATION}"


def onnx_model(ref: ModelRef) -> tuple[Path, str]:
    """The ONNX export of a sentence-transformers model (and its int8 quantisation), made once
    from the local weights under $MUSTER_HOME/onnx and reused: (directory, file in it).

    The export is written beside its final place and renamed into it, so a process that dies
    mid-export, or two that export at once, never leave a half-written model."""
    from muster_exact.text.tokens import resource_dir

    for module in ("onnxruntime", "optimum.onnxruntime"):
        optional.require(module, INSTALL_ONNX)
    st = require("sentence_transformers")
    name = "model.onnx" if ref.backend == "onnx" else f"model_{INT8_SUFFIX}.onnx"
    directory = resource_dir() / "onnx" / hashlib.sha256(ref.key.encode()).hexdigest()[:16]
    if (directory / "onnx" / name).is_file():
        return directory, f"onnx/{name}"
    directory.parent.mkdir(parents=True, exist_ok=True)
    log.info("exporting %s to ONNX (%s) under %s, once", ref.id, ref.backend, directory)
    work = Path(tempfile.mkdtemp(dir=directory.parent, prefix=".export-"))
    try:
        model = st.SentenceTransformer(
            str(resolve(ref)), device="cpu", backend="onnx", model_kwargs={"export": True}
        )
        model.save_pretrained(str(work))
        if ref.backend == "onnx-int8":
            st.export_dynamic_quantized_onnx_model(model, QUANTISATION, str(work), file_suffix=INT8_SUFFIX)
        try:
            os.rename(work, directory)
        except OSError:  # another process finished first: its export is the same
            if not (directory / "onnx" / name).is_file():
                raise ResourceMissing(
                    f"{directory} holds no {name} (an export from another version?); "
                    "remove that folder and run again to export the model anew"
                ) from None
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return directory, f"onnx/{name}"
