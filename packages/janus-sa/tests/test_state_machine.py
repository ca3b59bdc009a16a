"""Every server message type and step in every round phase, valid and invalid transitions (after Flower's
SecAgg+ stage tests): each cell of the table runs on a fresh deployment and must succeed or raise the
named error."""

import numpy as np
import pytest

from janus_sa import InProcessDeployment, JanusConfig
from janus_sa.errors import (
    IncompleteRoundError,
    NotEnrolledError,
    ProtocolError,
    ReplayError,
    RoundClosedError,
    WrongRoundError,
)
from janus_sa.protocol import JanusClient
from janus_sa.wire import MsgType, encode

PHASES = ("idle", "open", "closed", "agreed")
OK = None


def _setup(mode, phase):
    """Both servers in ``phase``; three clients uploaded (from "open" on), one enrolled client held back."""
    dep = InProcessDeployment(config=JanusConfig(dim=8, mode=mode))
    ids = dep.add_clients(4)
    ctx = {"dep": dep, "ids": ids, "ups": {}}
    if phase == "idle":
        return ctx
    a0, a1 = dep.s0.announce(1, dep.s0.head_), dep.s1.announce(1, dep.s1.head_)
    for cid in ids:
        dep.clients[cid].begin_round(a0, a1)
        ctx["ups"][cid] = dep.clients[cid].upload(np.full(8, 0.1))
    for cid in ids[:3]:
        dep.s0.receive(ctx["ups"][cid].to_s0)
        dep.s1.receive(ctx["ups"][cid].to_s1)
    if phase in ("closed", "agreed"):
        ctx["p0"], ctx["p1"] = dep.s0.participants(), dep.s1.participants()
    if phase == "agreed":
        dep.s0.agree(ctx["p1"])
        dep.s1.agree(ctx["p0"])
    return ctx


def _peer_list(ctx, role):
    dep = ctx["dep"]
    peer = dep.s1 if role == 0 else dep.s0
    key = dep.keys1 if role == 0 else dep.keys0
    ids = sorted(ctx["ids"][:3])
    checks = b"".join(peer._check_value(c) if c in peer.uploads_ else bytes(64) for c in ids) \
        if dep.config.mode == "exact" else b""
    return encode(MsgType.PARTICIPANTS, dep.session, 1, {"ids": ids, "checks": checks}, key.sign)


def _upload(ctx, role, which):
    up = ctx["ups"].get(ctx["ids"][which])
    if up is None:  # idle: a message for round 1 that no server has opened
        client = JanusClient(config=ctx["dep"].config, s0=ctx["dep"].keys0.public, s1=ctx["dep"].keys1.public,
                             session=ctx["dep"].session)
        return encode(MsgType.UPLOAD0 if role == 0 else MsgType.UPLOAD1, ctx["dep"].session, 1, {
            "model_digest": bytes(32), "masked": np.zeros(8, np.uint32), "seed_ct": bytes(92), "commitment": b"", "nonces": bytes(32)},
            client.key) if role == 0 else encode(MsgType.UPLOAD1, ctx["dep"].session, 1, {
                "model_digest": bytes(32), "seed_ct": bytes(92), "commitment": b"", "nonces": bytes(32)}, client.key)
    return up.to_s0 if role == 0 else up.to_s1


def _sketch_commit(ctx, role, cid_index=0):
    dep = ctx["dep"]
    cid = ctx["ids"][cid_index]
    key = dep.clients[cid].key
    from janus_sa.crypto import H

    return encode(MsgType.SKETCH_COMMIT, dep.session, 1, {"commitment": H}, key)


ACTIONS = {
    "announce same round": lambda ctx, s, role: s.announce(1, s.head_),
    "announce next round": lambda ctx, s, role: s.announce(2, s.head_),
    "upload (new client)": lambda ctx, s, role: s.receive(_upload(ctx, role, 3)),
    "upload (repeat)": lambda ctx, s, role: s.receive(_upload(ctx, role, 0)),
    "upload (round 5)": lambda ctx, s, role: s.receive(encode(
        MsgType.UPLOAD0 if role == 0 else MsgType.UPLOAD1, ctx["dep"].session, 5,
        {"model_digest": bytes(32), "masked": np.zeros(8, np.uint32), "seed_ct": bytes(92), "commitment": b"", "nonces": bytes(32)}
        if role == 0 else {"model_digest": bytes(32), "seed_ct": bytes(92), "commitment": b"", "nonces": bytes(32)},
        ctx["dep"].clients[ctx["ids"][0]].key)),
    "sketch commit": lambda ctx, s, role: s.receive(_sketch_commit(ctx, role)),
    "participants": lambda ctx, s, role: s.participants(),
    "agree": lambda ctx, s, role: s.agree(_peer_list(ctx, role)),
    "seal_commit": lambda ctx, s, role: s.seal_commit(),
    "aggregate": lambda ctx, s, role: s.aggregate(),
}

# expected outcome per (mode, phase, action); OK means the step is valid there
E = {
    "idle": {"announce same round": OK, "announce next round": OK, "upload (new client)": ProtocolError,
             "upload (repeat)": ProtocolError, "upload (round 5)": ProtocolError, "sketch commit": ProtocolError,
             "participants": ProtocolError, "agree": ProtocolError, "seal_commit": ProtocolError,
             "aggregate": ProtocolError},
    "open": {"announce same round": ReplayError, "announce next round": OK, "upload (new client)": OK,
             "upload (repeat)": ReplayError, "upload (round 5)": WrongRoundError, "sketch commit": ProtocolError,
             "participants": OK, "agree": OK, "seal_commit": ProtocolError, "aggregate": ProtocolError},
    "closed": {"announce same round": ReplayError, "announce next round": OK, "upload (new client)": RoundClosedError,
               "upload (repeat)": ReplayError, "upload (round 5)": WrongRoundError, "sketch commit": ProtocolError,
               "participants": OK, "agree": OK, "seal_commit": ProtocolError, "aggregate": ProtocolError},
    "agreed": {"announce same round": ReplayError, "announce next round": OK,
               "upload (new client)": RoundClosedError, "upload (repeat)": ReplayError,
               "upload (round 5)": WrongRoundError, "sketch commit": ProtocolError, "participants": OK,
               "agree": ProtocolError, "seal_commit": ProtocolError, "aggregate": OK},
}
SKETCH = {  # where sketch mode differs from exact mode
    ("agreed", "sketch commit"): OK, ("agreed", "seal_commit"): OK, ("agreed", "aggregate"): IncompleteRoundError,
}


@pytest.mark.parametrize("mode", ["exact", "sketch"])
@pytest.mark.parametrize("phase", PHASES)
@pytest.mark.parametrize("role", [0, 1])
def test_every_step_in_every_phase(mode, phase, role):
    for action, call in ACTIONS.items():
        expected = SKETCH.get((phase, action), E[phase][action]) if mode == "sketch" else E[phase][action]
        ctx = _setup(mode, phase)
        server = ctx["dep"].s0 if role == 0 else ctx["dep"].s1
        if expected is OK:
            call(ctx, server, role)
        else:
            with pytest.raises(expected) as info:
                call(ctx, server, role)
            # the most specific class is named: a generic ProtocolError is not a RoundClosedError etc.
            if expected is ProtocolError:
                assert type(info.value) in (ProtocolError,), (phase, action, repr(info.value))


def test_unenrolled_sender_is_refused_in_every_open_phase():
    for phase in ("open", "closed", "agreed"):
        ctx = _setup("exact", phase)
        dep = ctx["dep"]
        outsider = JanusClient(config=dep.config, s0=dep.keys0.public, s1=dep.keys1.public, session=dep.session)
        msg = encode(MsgType.UPLOAD1, dep.session, 1, {"model_digest": bytes(32), "seed_ct": bytes(92),
                                                       "commitment": b"", "nonces": bytes(32)}, outsider.key)
        with pytest.raises(NotEnrolledError):
            dep.s1.receive(msg)
