"""The checkpoint zoo: many encoders of one architecture and one feature size, kept as
committed artifacts (``make encoders`` verifies them), for the transferability study's
checkpoint-selection question (PACTran, Ding et al. 2022, arXiv:2203.05126, Sec. 4).

    from mdlnb.studies import zoo
    zoo.build()                          # train the checkpoints not committed yet (hours)
    zoo.verify()                         # SHA-256 of every committed checkpoint
    enc = zoo.load_member("simclr@500")  # an mdlnb.encoders.Encoder
    zoo.ZooConfig().members()            # random, <family>@<step>, <family>@final

Command line: ``python -m mdlnb.studies.zoo {build,verify}``.
"""

from mdlnb.studies.zoo._artifacts import (
    check,
    file_name,
    load_member,
    parse_member,
    provenance,
    verify,
    zoo_dir,
)
from mdlnb.studies.zoo._build import build, build_family
from mdlnb.studies.zoo._config import FAMILIES, ZooConfig

Config = ZooConfig

__all__ = [
    "Config",
    "FAMILIES",
    "ZooConfig",
    "build",
    "build_family",
    "check",
    "file_name",
    "load_member",
    "parse_member",
    "provenance",
    "verify",
    "zoo_dir",
]
