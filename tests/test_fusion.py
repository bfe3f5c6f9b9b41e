import pytest
import torch

from thesis_lib import run_experiment
from thesis_lib.models.fusion import MODES, FusionHead, FusionLayer, anneal, gumbel_weights, hard_negatives, mode_masks


def test_switch_attention_masks_are_switch_bert_table_1():
    # sequence [t0, t1 | i0, i1, i2]: rows are queries, columns keys, 1 = may attend
    TXT, IMG = [1, 1, 0, 0, 0], [0, 0, 1, 1, 1]
    expected = {
        "self-self": [TXT, TXT, IMG, IMG, IMG],     # M_0: image -> image, text -> text
        "self-cross": [IMG, IMG, IMG, IMG, IMG],    # M_1: image self (image keys), text cross (image keys)
        "cross-self": [TXT, TXT, TXT, TXT, TXT],    # M_2: image cross (text keys), text self (text keys)
        "joint": [[1] * 5] * 5,                     # M_3: everything
    }
    masks = mode_masks(2, 3)
    for name, mask in zip(MODES, masks):
        assert mask.int().tolist() == expected[name], name


def test_gumbel_softmax_at_temperature_near_zero_is_the_hard_selection():
    torch.manual_seed(0)
    logits = torch.log_softmax(torch.randn(64, 4), -1)
    noise = -torch.log(-torch.log(torch.rand(64, 4)))
    soft = gumbel_weights(logits, 1e-4, noise)
    hard = torch.nn.functional.one_hot((logits + noise).argmax(-1), 4).float()
    assert torch.allclose(soft, hard, atol=1e-6)
    assert not torch.allclose(gumbel_weights(logits, 1.0, noise), hard, atol=1e-2)   # a warm τ is soft


def test_switch_layer_soft_output_equals_the_hard_selection_near_tau_zero():
    torch.manual_seed(0)
    layer = FusionLayer(16, 2, 2.0, switch=True)
    with torch.no_grad():
        layer.switcher.mlp[-1].bias.copy_(torch.tensor([0.0, 0.0, 30.0, 0.0]))   # M_2 dominates π
    x, pad = torch.randn(3, 7, 16), torch.tensor([[False, False, True]] * 3)
    layer.train()
    layer.switcher.tau = 1e-3
    soft = layer(x, 3, pad)
    layer.eval()
    hard = layer(x, 3, pad)
    assert layer.last_choice.argmax(-1).eq(2).all()
    assert torch.allclose(soft, hard, atol=1e-5)
    keys = torch.cat([~pad, torch.ones(3, 4, dtype=torch.bool)], 1)[:, None, None, :]
    h = x + layer.attn(layer.norm1(x), attn_mask=keys & mode_masks(3, 4)[2])          # M_2 alone
    assert torch.allclose(hard, h + layer.mlp(layer.norm2(h)), atol=1e-5)            # Eq. 8, y_hard


def test_switch_input_block_takes_each_modality_from_the_chosen_layer(monkeypatch):
    head = FusionHead(8, 2, 2.0, depth=2, kind="switch", switch_input=True)
    prev, prev2 = torch.randn(2, 5, 8), torch.randn(2, 5, 8)
    choice = torch.tensor([[0.0, 1.0, 0.0, 0.0]] * 2)                # candidate 1: image from l-1, text from l-2
    monkeypatch.setattr(head.input_switchers[0], "forward", lambda *a: choice)
    x = head._switch_input(0, prev, prev2, 2, torch.zeros(2, 2, dtype=torch.bool))
    assert torch.equal(x[:, :2], prev2[:, :2]) and torch.equal(x[:, 2:], prev[:, 2:])
    with pytest.raises(ValueError, match="at least 2"):
        FusionHead(8, 2, 2.0, depth=1, kind="switch", switch_input=True)


def test_hard_negatives_are_never_a_positive_pair():
    torch.manual_seed(0)
    image_index = torch.tensor([0, 0, 1, 2, 2, 2, 3, 4])               # captions of the same image share an index
    same = image_index[:, None] == image_index[None, :]
    g = torch.Generator().manual_seed(0)
    for _ in range(200):
        sim = 10 * torch.randn(8, 8)
        sim[same] += 100                                               # the positives are the most similar
        neg_txt, neg_img = hard_negatives(sim, same, g)
        assert (image_index[neg_txt] != image_index).all() and (image_index[neg_img] != image_index).all()
    with pytest.raises(ValueError, match="no negative"):
        hard_negatives(torch.randn(3, 3), torch.ones(3, 3, dtype=torch.bool))


def test_hard_negatives_follow_the_similarities():
    sim = torch.tensor([[0.0, 8.0, 0.0], [0.0, 0.0, 8.0], [8.0, 0.0, 0.0]])
    same = torch.eye(3, dtype=torch.bool)
    neg_txt, neg_img = hard_negatives(sim, same, torch.Generator().manual_seed(0))
    assert neg_txt.tolist() == [1, 2, 0] and neg_img.tolist() == [2, 0, 1]


def test_temperature_annealing():
    assert anneal((1.0, 0.1), 0.0) == pytest.approx(1.0) and anneal((1.0, 0.1), 1.0) == pytest.approx(0.1)
    assert anneal((1.0, 0.1), 0.5) == pytest.approx(0.1 ** 0.5) and anneal((1.0, 0.1), 2.0) == pytest.approx(0.1)


@pytest.mark.parametrize("variant", ["switch_sib", "fusion_joint"])
def test_fusion_variants_train_and_report_matching_and_reranking(tmp_path, variant):
    result = run_experiment("smoke", variant, 0, out_dir=tmp_path)
    m = result["metrics"]
    assert 0 <= m["flickr_itm_acc"] <= 100 and 0 <= m["flickr_rerank_mean"] <= 100
    assert m["flickr_rerank_ir@1"] <= m["flickr_rerank_ir@5"] <= m["flickr_rerank_ir@10"]
    choices = result.get("fusion", {}).get("flickr_switch_choices")
    if variant == "fusion_joint":
        assert choices == {"modes": [], "inputs": []}
        return
    assert len(choices["modes"]) == 2 and len(choices["inputs"]) == 1
    for fractions in choices["modes"] + choices["inputs"]:
        assert len(fractions) == 4 and sum(fractions) == pytest.approx(1.0)


def test_reranking_a_test_set_smaller_than_k_rescores_every_candidate(tmp_path):
    """The rehearsal's test sets hold 3-4 images: k = eval.rerank_k larger than the set must not fail (it did)."""
    result = run_experiment("smoke", "fusion_joint", 0, out_dir=tmp_path,
                            overrides={"eval.rerank_k": 64, "train.steps": 2})
    m = result["metrics"]                                   # smoke Flickr: 24 images, 120 captions
    assert 0 <= m["flickr_rerank_tr@1"] <= m["flickr_rerank_tr@10"] <= 100
    assert 0 <= m["flickr_rerank_ir@1"] <= m["flickr_rerank_ir@10"] <= 100


def test_a_hard_negative_never_fits_its_anchor():
    """On the world a caption of another picture can describe this one too: such a caption is never drawn."""
    fits = torch.eye(4, dtype=torch.bool)
    fits[0, 1] = fits[2, 3] = True                                     # caption 1 fits image 0; caption 3 image 2
    sim = torch.zeros(4, 4)
    sim[0, 1] = sim[2, 3] = 50.0                                        # and the dual encoder likes them best
    g = torch.Generator().manual_seed(0)
    for _ in range(50):
        neg_txt, neg_img = hard_negatives(sim, fits, g)
        assert not fits[torch.arange(4), neg_txt].any() and not fits[neg_img, torch.arange(4)].any()
