"""Janus: dual-server, verifiable, multi-round secure aggregation for federated learning.

Entry points: :class:`JanusClient`, :class:`AggregationServer` (S0), :class:`MaskServer` (S1),
configured by :class:`JanusConfig`; :class:`InProcessDeployment` runs whole rounds in one process and
:mod:`janus_sa.net` runs the servers as gRPC services.
"""

from importlib.metadata import PackageNotFoundError, version

from janus_sa.crypto import ServerKeys, ServerPublicKeys, SigningKey, model_digest
from janus_sa.errors import (
    AggregateMismatchError,
    ConfigError,
    ExcludedError,
    JanusError,
    ModelInconsistencyError,
    NotEnrolledError,
    ParticipantSetMismatchError,
    ReplayError,
    RoundClosedError,
    SignatureError,
    TooFewParticipantsError,
    VerificationError,
    WireFormatError,
    WrongRoundError,
)
from janus_sa.protocol import (
    AggregationServer,
    JanusClient,
    JanusConfig,
    MaskServer,
    Roster,
    RoundResult,
    Upload,
    enroll,
)
from janus_sa.quantize import Quantizer
from janus_sa.simulation import InProcessDeployment, RoundReport

try:
    __version__ = version("janus-sa")
except PackageNotFoundError:  # source tree without install
    __version__ = "0.0.0"

__all__ = [
    "AggregateMismatchError",
    "AggregationServer",
    "ConfigError",
    "ExcludedError",
    "InProcessDeployment",
    "JanusClient",
    "JanusConfig",
    "JanusError",
    "MaskServer",
    "ModelInconsistencyError",
    "NotEnrolledError",
    "ParticipantSetMismatchError",
    "Quantizer",
    "ReplayError",
    "Roster",
    "RoundClosedError",
    "RoundReport",
    "RoundResult",
    "ServerKeys",
    "ServerPublicKeys",
    "SignatureError",
    "SigningKey",
    "TooFewParticipantsError",
    "Upload",
    "VerificationError",
    "WireFormatError",
    "WrongRoundError",
    "__version__",
    "enroll",
    "model_digest",
]
