"""Exception hierarchy: every failure the protocol can detect has its own named type."""

from __future__ import annotations


class JanusError(Exception):
    """Base class of every error raised by janus_sa on protocol input."""


class ConfigError(JanusError, ValueError):
    """A parameter is out of its accepted range."""


class ConfigTypeError(ConfigError, TypeError):
    """A parameter has a type it does not accept (also a ``TypeError``)."""


# --- wire format -----------------------------------------------------------------------------
class WireFormatError(JanusError):
    """A message could not be decoded."""


class OversizedMessageError(WireFormatError):
    """The encoded message is longer than the configured limit."""


class MalformedMessageError(WireFormatError):
    """The bytes are not a well-formed Janus envelope (truncated, wrong types, wrong lengths)."""


class UnsupportedVersionError(WireFormatError):
    """The envelope carries a protocol version this implementation does not speak."""


class UnknownMessageTypeError(WireFormatError):
    """The envelope's message type is not one of the known types."""


class InvalidGroupElementError(WireFormatError):
    """A field that must be a ristretto255 point or a canonical scalar is not one."""


# --- authentication / freshness -------------------------------------------------------------------
class SignatureError(JanusError):
    """A signature is missing, malformed, or does not verify under the expected key."""


class NotEnrolledError(SignatureError):
    """The sender's key is not in the roster both servers signed (or the caller may not read this)."""


class ReplayError(JanusError):
    """A message from a past round, or a second copy of an accepted message."""


class ModelReplayError(ReplayError):
    """A round for a model version that is not the successor of the last verified aggregate, or one already spent.

    Every party follows one chain of model versions: the agreed initial model, then each verified
    aggregate's successor under the configured update rule. A client uploads once per version and a server
    releases at most one aggregate per version, so two aggregates over nearly the same updates (the same
    model re-announced, or a nudged copy) never exist and cannot be subtracted.
    """


class WrongRoundError(JanusError):
    """A message names a round other than the current one (and is not an old replay)."""


class WrongSessionError(JanusError):
    """A message belongs to another deployment (session id differs)."""


class ProtocolError(JanusError):
    """A message arrived in a state where it is not allowed, or a round cannot proceed."""


class NotAParticipantError(ProtocolError):
    """A sketch commitment from a client the servers left out of the agreed participant set."""


class RoundClosedError(ProtocolError):
    """An upload arrived after the server closed the round's participant list."""


class IncompleteRoundError(ProtocolError):
    """The round cannot produce an aggregate (e.g. a participant missed the sketch phase)."""


class SketchCheatError(ProtocolError):
    """Sketch mode with the range proof: participants whose sketch commitment contradicts their upload.

    Both servers found it by comparing per-client pairs; they release no aggregate for the round and
    refuse these clients' uploads in every later round (the ban survives new model versions and restarts
    from ``state_dir``). ``cheaters`` names them.
    """

    def __init__(self, message: str = "", *, cheaters: tuple = ()) -> None:
        super().__init__(message)
        self.cheaters = tuple(cheaters)


class TooFewParticipantsError(IncompleteRoundError):
    """The participant set is smaller than the configured ``min_participants`` (refused by servers and clients)."""


class DecryptionError(JanusError):
    """An encrypted seed did not decrypt (wrong key, tampered ciphertext or wrong context)."""


# --- verification by clients -------------------------------------------------------------------
class VerificationError(JanusError):
    """The aggregate returned by the servers failed a client-side check; nothing was accepted."""


class ModelInconsistencyError(VerificationError):
    """S0 and S1 (or announcement and aggregate) disagree on the round's model digest."""


class ParticipantSetMismatchError(VerificationError):
    """S0 and S1 aggregated over different client sets."""


class ParticipationPolicyError(ParticipantSetMismatchError):
    """A participant set that is not a union of whole batches of the roster (batch participation policy)."""


class AggregateMismatchError(VerificationError):
    """The unmasked aggregate does not open the aggregated commitments (a server cheated)."""


class AggregateRangeError(VerificationError):
    """The verified sum leaves the range ``[0, n (Q - 1)]`` that ``n`` codes in ``[0, Q)`` can reach.

    The commitments bind the sum but carry no range proof, so this is the bound every verifier checks:
    a participant contributed codes outside ``[0, Q)`` (README, threat model).
    """


class ExcludedError(VerificationError):
    """The client uploaded in the round but the servers' final participant list leaves it out.

    ``aggregate0`` and ``aggregate1`` are the two servers' signed aggregates, each naming the final
    list: evidence of the exclusion that anyone holding the servers' public keys can check. ``reason``
    is the reason both aggregates give, one of four: ``"inconsistent upload"`` (the upload failed the
    servers' consistency check), ``"reached one server only"``, ``"batch incomplete"`` (a member of its
    batch is missing, ``batch_size`` > 1) and ``"invalid range proof"`` (``range_proof=True``: the joint
    proof check failed; the cause is either the client's proof or one server's false verifier values,
    which the client cannot tell apart, so ``blamed`` stays empty). ``blamed`` names the servers
    (``"S0"``, ``"S1"``) whose consistency pair, as both aggregates list it, differs from the pair this
    client recomputes from its own secrets: for an honest client excluded as inconsistent it names the
    server that lied (empty for the other reasons, or when both listed pairs are right). Anyone holding the servers' public
    keys checks the evidence with :func:`janus_sa.protocol.check_exclusion`. ``result`` is the verified
    aggregate of the round (the client followed it to the next model version), or None.
    """

    def __init__(self, message: str, *, aggregate0: bytes = b"", aggregate1: bytes = b"", reason: str = "",
                 blamed: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.aggregate0, self.aggregate1, self.reason = aggregate0, aggregate1, reason
        self.blamed = blamed
        self.result: object | None = None


class SealMismatchError(VerificationError):
    """Sketch mode: an aggregate differs from the value a server sealed before the challenge."""


# --- deployment ----------------------------------------------------------------------------
class NetworkError(JanusError):
    """A remote call failed for a reason other than a protocol error."""


class ServerUnavailableError(NetworkError):
    """A server could not be reached (down, restarting, or timed out)."""


class RoundFailedError(JanusError):
    """The servers abandoned the round (e.g. S1 was unreachable); no aggregate exists for it."""


class NotReadyError(JanusError):
    """The requested value does not exist yet; poll again."""
