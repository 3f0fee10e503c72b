"""The pretraining stage: the studies' self-pretrained encoders, trained until their
linear probe stops improving and kept as committed artifacts (``make encoders``).

    from mdlnb.studies import pretraining
    pretraining.run()                     # train what has no artifact yet (hours on a CPU)
    pretraining.verify()                  # SHA-256 of every committed encoder
    enc = pretraining.load_encoder("simclr", "vit", "S")
    pretraining.result().save("paper")    # probe curves and the encoder table

Command line: ``python -m mdlnb.studies.pretraining {train,verify,paper}``.
"""

from mdlnb.studies.pretraining._artifacts import (
    ChecksumError,
    artifact_dir,
    check,
    load_encoder,
    names,
    params_bytes,
    provenance,
    sha256,
    unit_name,
    verify,
)
from mdlnb.studies.pretraining._config import (
    OBJECTIVES_SUITE,
    SCALING_SUITE,
    PretrainingConfig,
    parse_unit,
)
from mdlnb.studies.pretraining._probe import ProbeMonitor
from mdlnb.studies.pretraining._result import PretrainingResult
from mdlnb.studies.pretraining._run import monitor, result, run

Config = PretrainingConfig

__all__ = [
    "ChecksumError",
    "Config",
    "OBJECTIVES_SUITE",
    "PretrainingConfig",
    "PretrainingResult",
    "ProbeMonitor",
    "SCALING_SUITE",
    "artifact_dir",
    "check",
    "load_encoder",
    "monitor",
    "names",
    "params_bytes",
    "parse_unit",
    "provenance",
    "result",
    "run",
    "sha256",
    "unit_name",
    "verify",
]
