"""Agent packages: save/load round trip, legal-move policies, and refusal of damaged files."""

from __future__ import annotations

import hashlib
import json
import zipfile
from pathlib import Path

import numpy as np
import pytest
import torch

from gotk.encoders import get_encoder
from gotk.game.state import GameState
from gotk.nets import AgentError, build_model, load_agent, save_agent
from gotk.nets.agent_file import AGENT_JSON, WEIGHTS


@pytest.fixture(autouse=True, scope="module")
def _one_thread():
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


def _positions(n: int = 12) -> list[GameState]:
    """Real positions: the first ``n`` states of a game from the built-in sample archive."""
    from gotk.data import HELDOUT_ARCHIVE
    from gotk.sgf.reader import read_sgf
    from gotk.sources.archives import SgfSource, iter_sources

    for src in iter_sources([HELDOUT_ARCHIVE]):
        if not isinstance(src, SgfSource):
            continue
        rec = read_sgf(src.data, src.archive, src.member)[0]
        if rec.num_moves < 60 or rec.handicap or rec.setup_black:
            continue
        state = GameState.new(19)
        out = []
        for i, (color, point) in enumerate(rec.moves):
            if i % 5 == 0:
                out.append(state.copy())
            if len(out) == n:
                return out
            state.to_play = color
            state.play(point)
        raise AssertionError("game too short")
    raise AssertionError("no game found")


@pytest.fixture(scope="module")
def agent_file(tmp_path_factory) -> Path:
    torch.manual_seed(1)
    enc = get_encoder("sevenplane", 19)
    model = build_model("resnet", enc.num_planes, 19, head="both", blocks=1, filters=8)
    with torch.no_grad():  # make batch-norm statistics non-trivial so a lost buffer would show
        for m in model.modules():
            if isinstance(m, torch.nn.BatchNorm2d):
                m.running_mean.uniform_(-0.5, 0.5)
                m.running_var.uniform_(0.5, 2.0)
    path = tmp_path_factory.mktemp("agent") / "agent.gotk"
    save_agent(path, model, "resnet", {"blocks": 1, "filters": 8}, enc.describe(), "ab" * 32, {"val_top1": 0.1})
    return path


def test_round_trip_identical_predictions(agent_file: Path) -> None:
    enc = get_encoder("sevenplane", 19)
    a = load_agent(agent_file)
    b = load_agent(agent_file)
    feats = np.stack([enc.encode(s) for s in _positions()])
    pa, va = a.predict(feats)
    pb, vb = b.predict(feats)
    assert np.array_equal(pa, pb) and np.array_equal(va, vb)
    meta = a.meta
    assert meta["model"] == {"name": "resnet", "head": "both", "hparams": {"blocks": 1, "filters": 8}}
    assert meta["encoder"]["name"] == "sevenplane" and meta["board_size"] == 19
    assert meta["data_manifest_sha256"] == "ab" * 32 and meta["metrics"] == {"val_top1": 0.1}
    # saved tensors equal the loaded model's, including batch-norm buffers
    with zipfile.ZipFile(agent_file) as zf:
        from safetensors.torch import load

        saved = load(zf.read(WEIGHTS))
    for k, v in a.model.state_dict().items():
        assert torch.equal(saved[k], v), k


def test_loaded_agent_predicts_like_the_saved_model(tmp_path: Path) -> None:
    torch.manual_seed(3)
    enc = get_encoder("simple", 19)
    model = build_model("small", enc.num_planes, 19, head="both").eval()
    path = save_agent(tmp_path / "s.gotk", model, "small", {}, enc.describe())
    feats = torch.from_numpy(np.stack([enc.encode(s) for s in _positions(6)]))
    with torch.no_grad():
        p, v = model(feats)
    logp, val = load_agent(path).predict(feats)
    assert np.array_equal(logp, torch.log_softmax(p, 1).numpy())
    assert np.array_equal(val, v.numpy())


def test_policy_value_and_moves_are_legal(agent_file: Path) -> None:
    agent = load_agent(agent_file)
    rng = np.random.default_rng(0)
    for state in _positions():
        probs = agent.policy(state)
        assert probs.shape == (362,)
        assert np.isclose(probs.sum(), 1.0)
        legal = np.zeros(362, dtype=bool)
        legal[state.legal_moves()] = True
        assert (probs[~legal] == 0).all()
        assert (probs[np.flatnonzero(state.board)] == 0).all()  # occupied points
        assert legal[agent.select_move(state)]
        assert agent.select_move(state) == int(np.argmax(probs))
        assert legal[agent.select_move(state, temperature=1.0, rng=rng)]
        assert -1.0 <= agent.value(state) <= 1.0


def test_policy_only_agent_has_no_value(tmp_path: Path) -> None:
    enc = get_encoder("sevenplane", 9)
    model = build_model("alphago", enc.num_planes, 9, filters=4)
    path = save_agent(tmp_path / "a.gotk", model, "alphago", {"filters": 4}, enc.describe())
    agent = load_agent(path)
    state = GameState.new(9)
    assert agent.policy(state).shape == (82,)
    with pytest.raises(ValueError, match="no value head"):
        agent.value(state)
    with pytest.raises(ValueError, match="9x9"):
        agent.policy(GameState.new(19))


def _rewrite(src: Path, dst: Path, json_fn=None, weights_fn=None, extra: dict | None = None) -> Path:
    with zipfile.ZipFile(src) as zf:
        meta = zf.read(AGENT_JSON)
        blob = zf.read(WEIGHTS)
    if json_fn:
        meta = json_fn(meta)
    if weights_fn:
        blob = weights_fn(blob)
    with zipfile.ZipFile(dst, "w") as zf:
        zf.writestr(AGENT_JSON, meta)
        zf.writestr(WEIGHTS, blob)
        for k, v in (extra or {}).items():
            zf.writestr(k, v)
    return dst


def _edit_json(fn):
    def inner(raw: bytes) -> bytes:
        d = json.loads(raw)
        fn(d)
        return json.dumps(d).encode()
    return inner


def _flip_byte(blob: bytes, at: int = -10) -> bytes:
    b = bytearray(blob)
    b[at] ^= 0x01
    return bytes(b)


def test_tampered_and_truncated_files_are_refused(agent_file: Path, tmp_path: Path) -> None:
    raw = agent_file.read_bytes()

    # truncated zip
    (tmp_path / "trunc.gotk").write_bytes(raw[: len(raw) // 2])
    with pytest.raises(AgentError, match="not a readable agent zip"):
        load_agent(tmp_path / "trunc.gotk")
    # not a zip at all
    (tmp_path / "junk.gotk").write_bytes(b"hello" * 100)
    with pytest.raises(AgentError):
        load_agent(tmp_path / "junk.gotk")
    # a byte flipped inside a stored member: the zip CRC check catches it
    stored = _rewrite(agent_file, tmp_path / "stored.gotk")  # ZIP_STORED: member bytes lie in the file as is
    data = bytearray(stored.read_bytes())
    pos = data.find(b"F32") + 200  # inside the weights payload
    data[pos] ^= 0xFF
    (tmp_path / "crc.gotk").write_bytes(bytes(data))
    with pytest.raises(AgentError, match="Bad CRC-32"):
        load_agent(tmp_path / "crc.gotk")
    # weights changed (zip consistent): the sha256 in agent.json catches it
    with pytest.raises(AgentError, match="sha256"):
        load_agent(_rewrite(agent_file, tmp_path / "w.gotk", weights_fn=_flip_byte))
    # weights changed and the sha256 updated, but the safetensors header broken
    def broken_header(blob: bytes) -> bytes:
        return b"\xff" * 8 + blob[8:]

    def fix_sha(blob_fn):
        def j(raw: bytes) -> bytes:
            d = json.loads(raw)
            with zipfile.ZipFile(agent_file) as zf:
                d["weights"]["sha256"] = hashlib.sha256(blob_fn(zf.read(WEIGHTS))).hexdigest()
            return json.dumps(d).encode()
        return j

    with pytest.raises(AgentError, match="safetensors"):
        load_agent(_rewrite(agent_file, tmp_path / "h.gotk", json_fn=fix_sha(broken_header), weights_fn=broken_header))
    # agent.json not JSON / wrong format / model that does not fit the weights / extra member
    with pytest.raises(AgentError, match="JSON"):
        load_agent(_rewrite(agent_file, tmp_path / "j.gotk", json_fn=lambda raw: raw[:-5]))
    with pytest.raises(AgentError, match="format"):
        load_agent(_rewrite(agent_file, tmp_path / "f.gotk", json_fn=_edit_json(lambda d: d.update(format="x"))))
    with pytest.raises(AgentError, match="do not fit"):
        load_agent(_rewrite(agent_file, tmp_path / "m.gotk",
                            json_fn=_edit_json(lambda d: d["model"]["hparams"].update(blocks=2))))
    with pytest.raises(AgentError, match="differ from those listed"):
        load_agent(_rewrite(agent_file, tmp_path / "t.gotk",
                            json_fn=_edit_json(lambda d: d["weights"]["tensors"].pop("pass_fc.bias"))))
    with pytest.raises(AgentError, match="exactly"):
        load_agent(_rewrite(agent_file, tmp_path / "x.gotk", extra={"payload.pkl": b"\x80\x04"}))
    with pytest.raises(AgentError, match="no such file"):
        load_agent(tmp_path / "missing.gotk")
    # the untouched file still loads
    load_agent(agent_file)


def test_package_holds_no_pickle(agent_file: Path) -> None:
    with zipfile.ZipFile(agent_file) as zf:
        assert sorted(zf.namelist()) == [AGENT_JSON, WEIGHTS]
        blob = zf.read(WEIGHTS)
        meta = json.loads(zf.read(AGENT_JSON))
    n = int.from_bytes(blob[:8], "little")  # safetensors: u64 header length, then a JSON header
    header = json.loads(blob[8:8 + n])
    assert set(header) - {"__metadata__"} == set(meta["weights"]["tensors"])
    assert meta["weights"]["sha256"] == hashlib.sha256(blob).hexdigest()


def _globals_agent(path: Path, size: int = 9) -> Path:
    """A resnet agent over the relative encoder that takes the global inputs, its weights made distinctive."""
    from gotk.encoders import global_inputs as GI

    torch.manual_seed(4)
    enc = get_encoder("relative", size)
    model = build_model("resnet", enc.num_planes, size, head="both", num_globals=GI.size(), blocks=1, filters=8)
    with torch.no_grad():
        for p in model.parameters():
            p.normal_(0, 0.3)
    return save_agent(path, model, "resnet", {"blocks": 1, "filters": 8}, enc.describe())


def test_agent_with_global_inputs_round_trips_and_reads_the_komi(tmp_path: Path) -> None:
    from gotk.encoders import global_inputs as GI

    path = _globals_agent(tmp_path / "glob.gotk")
    with zipfile.ZipFile(path) as zf:
        meta = json.loads(zf.read(AGENT_JSON))
    assert meta["globals"] == GI.describe()
    agent = load_agent(path)
    assert agent.num_globals == 2
    state = GameState(9, komi=7.5)
    state.play(40)  # white to move: +7.5 / 20 for white
    assert np.allclose(agent.global_inputs(state), [7.5 / 20, 1.0])
    cheap = GameState(9, komi=0.5)
    cheap.play(40)
    assert agent.value(state) != pytest.approx(agent.value(cheap), abs=1e-6)
    assert not np.allclose(agent.policy(state), agent.policy(cheap))
    plain = load_agent(_globals_agent(tmp_path / "again.gotk"))
    assert agent.value(state) == pytest.approx(plain.value(state), abs=1e-6)  # the same file plays the same


def test_agent_with_other_global_inputs_is_refused(tmp_path: Path) -> None:
    src = _globals_agent(tmp_path / "glob.gotk")

    def rename(raw: bytes) -> bytes:
        meta = json.loads(raw)
        meta["globals"]["names"] = ["komi", "handicap"]
        return json.dumps(meta).encode()

    bad = _rewrite(src, tmp_path / "bad.gotk", rename)
    with pytest.raises(AgentError, match="takes global inputs"):
        load_agent(bad)
