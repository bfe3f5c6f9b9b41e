import pickle
import sys
import types

import pytest
import torch
from checkpoint_fixtures import (
    beitv2_file,
    beitv2_reference,
    d2v_image_file,
    d2v_image_reference,
    d2v_text_file,
    d2v_text_reference,
)

from thesis_lib import CheckpointError
from thesis_lib.config import ImageConfig, TeacherConfig, TextConfig
from thesis_lib.models.checkpoints import (
    load_beitv2,
    load_data2vec2_image,
    load_data2vec2_text,
    save_data2vec2_image,
    save_data2vec2_text,
    timm_beitv2,
    torch_load,
)
from thesis_lib.models.encoders import hf_encoder

IMG_CFG = ImageConfig(img_size=32, patch_size=8)
TXT_CFG = TextConfig(vocab_size=60, max_positions=20, mask_id=59)
IMAGES = torch.randn(2, 3, 32, 32, generator=torch.Generator().manual_seed(9))
TOKENS = torch.tensor([[0, 5, 9, 33, 2, 1, 1], [0, 41, 7, 12, 17, 28, 2]])


@pytest.mark.parametrize("prenet,blocks,keep", [(0, 4, 2), (2, 3, 2)])
def test_data2vec2_image_matches_reference(tmp_path, prenet, blocks, keep):
    sd = d2v_image_file(tmp_path / "base_imagenet.pt", P=prenet, L=blocks)
    enc = load_data2vec2_image(tmp_path / "base_imagenet.pt", IMG_CFG, keep=keep, num_heads=2).eval()
    assert len(enc.blocks.blocks) == prenet + keep            # prenet blocks stay in front of blocks[:keep]
    out, _ = enc(IMAGES)
    ref = d2v_image_reference(sd, IMAGES, H=2, P=prenet, keep=keep, patch=8)
    assert out.shape == (2, 17, 32) and torch.allclose(out, ref, atol=1e-4)


def test_data2vec2_image_ema_weights(tmp_path):
    sd = d2v_image_file(tmp_path / "f.pt", fp16=True)
    enc = load_data2vec2_image(tmp_path / "f.pt", IMG_CFG, keep=2, num_heads=2, use_ema=True).eval()
    ref = d2v_image_reference(sd["_ema"], IMAGES, H=2, P=0, keep=2, patch=8)
    assert torch.allclose(enc(IMAGES)[0], ref, atol=1e-4)


def test_data2vec2_text_matches_reference(tmp_path):
    sd = d2v_text_file(tmp_path / "nlp_base.pt")
    enc = load_data2vec2_text(tmp_path / "nlp_base.pt", TXT_CFG, keep=2, num_heads=2).eval()
    out, pad = enc(TOKENS)
    ref = d2v_text_reference(sd, TOKENS, H=2, keep=2)
    real = ~pad
    assert torch.allclose(out[real], ref[real], atol=1e-4)


@pytest.mark.parametrize("final_norm", [True, False])
def test_beitv2_matches_reference(tmp_path, final_norm):
    sd = beitv2_file(tmp_path / "beitv2.pth")
    cfg = TeacherConfig(dim=32, depth=2, num_heads=2, patch_size=8, final_norm=final_norm)
    teacher = load_beitv2(tmp_path / "beitv2.pth", cfg, 32)
    ref = beitv2_reference(sd, IMAGES, H=2, L=2, patch=8, final_norm=final_norm)
    assert torch.allclose(teacher(IMAGES), ref, atol=1e-4)


def test_key_errors_are_named(tmp_path):
    path = tmp_path / "f.pt"
    d2v_image_file(path)
    ck = {k: v for k, v in torch_load(path).items() if k in ("model", "cfg")}   # fairseq's other entries: placeholders
    del ck["model"]["modality_encoders.IMAGE.context_encoder.norm.bias"]
    ck["model"]["blocks.0.attn.extra"] = torch.zeros(1)
    ck["model"]["blocks.1.mlp.fc1.bias"] = torch.zeros(7)
    torch.save(ck, path)
    with pytest.raises(CheckpointError) as err:
        load_data2vec2_image(path, IMG_CFG, keep=2, num_heads=2)
    msg = str(err.value)
    assert "missing keys: norm.bias" in msg and "unexpected keys: blocks.blocks.0.attn.extra" in msg
    assert "blocks.blocks.1.mlp.fc1.bias (7,) != (128,)" in msg


def test_wrong_file_kind_and_depth(tmp_path):
    d2v_text_file(tmp_path / "nlp_base.pt")
    with pytest.raises(CheckpointError, match="not a Data2Vec2 image checkpoint"):
        load_data2vec2_image(tmp_path / "nlp_base.pt", IMG_CFG, keep=2)
    with pytest.raises(CheckpointError, match="has 3 blocks; 6 were requested"):
        load_data2vec2_text(tmp_path / "nlp_base.pt", TXT_CFG, keep=6)
    beitv2_file(tmp_path / "b.pth", L=2)
    with pytest.raises(CheckpointError, match="unexpected keys: blocks.1"):
        load_beitv2(tmp_path / "b.pth", TeacherConfig(dim=32, depth=1, num_heads=2, patch_size=8), 32)


def test_missing_and_corrupt_files(tmp_path):
    with pytest.raises(CheckpointError, match="checkpoint not found"):
        torch_load(tmp_path / "nope.pt")
    (tmp_path / "bad.pt").write_bytes(b"\x00garbage" * 10)
    with pytest.raises(CheckpointError, match="cannot read checkpoint"):
        torch_load(tmp_path / "bad.pt")


class Namespace:  # pickled as if it came from a package that is not installed (fairseq's configs)
    pass


def test_foreign_pickled_objects_load_without_their_package(tmp_path, monkeypatch):
    monkeypatch.setattr(Namespace, "__module__", "fairseq_fake")
    monkeypatch.setitem(sys.modules, "fairseq_fake", types.SimpleNamespace(Namespace=Namespace))
    torch.save({"args": Namespace(), "model": {"w": torch.ones(2)}}, tmp_path / "f.pt")
    monkeypatch.delitem(sys.modules, "fairseq_fake")
    with pytest.raises(pickle.UnpicklingError):
        torch.load(tmp_path / "f.pt", weights_only=True)
    assert torch.equal(torch_load(tmp_path / "f.pt")["model"]["w"], torch.ones(2))


def test_demo_writers_round_trip(tmp_path):
    d2v_image_file(tmp_path / "a.pt", L=2)
    enc = load_data2vec2_image(tmp_path / "a.pt", IMG_CFG, keep=2, num_heads=2).eval()
    save_data2vec2_image(enc, tmp_path / "b.pt", num_heads=2)
    again = load_data2vec2_image(tmp_path / "b.pt", IMG_CFG, keep=2).eval()
    assert torch.equal(enc(IMAGES)[0], again(IMAGES)[0])
    d2v_text_file(tmp_path / "t.pt", L=2)
    txt = load_data2vec2_text(tmp_path / "t.pt", TXT_CFG, keep=2, num_heads=2).eval()
    save_data2vec2_text(txt, tmp_path / "t2.pt", num_heads=2)
    assert torch.equal(txt(TOKENS)[0], load_data2vec2_text(tmp_path / "t2.pt", TXT_CFG, keep=2).eval()(TOKENS)[0])


def test_transformers_routes(tmp_path):
    from transformers import (
        BertConfig,
        BertModel,
        Data2VecTextConfig,
        Data2VecTextModel,
        Data2VecVisionConfig,
        Data2VecVisionModel,
    )
    small = dict(hidden_size=32, num_hidden_layers=3, num_attention_heads=2, intermediate_size=64)
    torch.manual_seed(0)
    bert = BertModel(BertConfig(vocab_size=60, **small), add_pooling_layer=False).eval()
    bert.save_pretrained(tmp_path / "bert")
    enc = hf_encoder(str(tmp_path / "bert"), "text", keep=2, pad_id=0).eval()
    assert len(enc.model.encoder.layer) == 2
    tokens = torch.tensor([[2, 5, 9, 3, 0, 0]])
    out, pad = enc(tokens)
    bert.encoder.layer = bert.encoder.layer[:2]
    ref = bert(input_ids=tokens, attention_mask=(tokens != 0).long()).last_hidden_state
    assert torch.allclose(out[~pad], ref[~pad], atol=1e-5)
    h0, pad = enc.embed_inputs(tokens)                        # H_0 + t through the layers = the model with t added
    shifted = enc.blocks(h0 + 1, pad)                         # to its embedding output (the TTE before the encoders)
    bert.embeddings.register_forward_hook(lambda module, args, output: output + 1)
    ref = bert(input_ids=tokens, attention_mask=(tokens != 0).long()).last_hidden_state
    assert torch.allclose(shifted[~pad], ref[~pad], atol=1e-5) and not torch.allclose(shifted, out)

    Data2VecTextModel(Data2VecTextConfig(vocab_size=60, **small)).save_pretrained(tmp_path / "d2vt")
    assert hf_encoder(str(tmp_path / "d2vt"), "text", 2, pad_id=1)(TOKENS)[0].shape == (2, 7, 32)
    vision = Data2VecVisionConfig(image_size=32, patch_size=8, use_shared_relative_position_bias=True, **small)
    Data2VecVisionModel(vision).save_pretrained(tmp_path / "d2vv")
    image = hf_encoder(str(tmp_path / "d2vv"), "image", 2).eval()
    assert image(IMAGES)[0].shape == (2, 17, 32)
    h0, _ = image.embed_inputs(IMAGES)
    assert (torch.equal(image.blocks(h0), image(IMAGES)[0])
            and not torch.allclose(image.blocks(h0 + 1), image.blocks(h0)))


def test_timm_beitv2_route(tmp_path):
    import timm
    kw = dict(img_size=32, patch_size=8, embed_dim=32, depth=2, num_heads=2, num_classes=0, global_pool="token")
    torch.manual_seed(0)
    ref = timm.create_model("beitv2_base_patch16_224", **kw).eval()
    torch.save(ref.state_dict(), tmp_path / "timm_beitv2.pth")
    teacher = timm_beitv2(str(tmp_path / "timm_beitv2.pth"), TeacherConfig(dim=32, depth=2, num_heads=2,
                                                                           patch_size=8), 32)
    assert torch.allclose(teacher(IMAGES), ref.forward_features(IMAGES)[:, 0], atol=1e-5)
