import pytest
import torch

from thesis_lib import VARIANTS, get_config
from thesis_lib.models.emkum import IMAGE, TEXT, SharedBlock, build_model
from thesis_lib.costs import parameter_table
from thesis_lib.models.teacher import build_teacher

PAIR = dict(images=torch.randn(3, 3, 16, 16), tokens=torch.tensor([[0, 7, 8, 2, 1, 1]] * 3))


def n_params(m):
    return sum(p.numel() for p in m.parameters())


def test_tte_parameter_arithmetic():
    D = get_config("smoke").model.dim
    base = n_params(build_model(get_config("smoke", "baseline")))
    assert n_params(build_model(get_config("smoke", "tte_before"))) - base == 2 * D       # Embedding(2, D)
    assert n_params(build_model(get_config("smoke", "tte_after"))) - base == 2 * D
    assert n_params(build_model(get_config("smoke", "tte_after_ls"))) - base == 3 * D     # + one shared LayerScale γ


def test_type_ids_and_type_vectors():
    """Adding one type vector to every token is the embedding of type ids ≡ modality (TTE chapter Eq. 3; 0 = text,
    1 = image), pads included."""
    model = build_model(get_config("smoke", "tte_after"))
    torch.manual_seed(0)
    h_base, _ = model.text_encoder(PAIR["tokens"])
    h, _ = model.encoder_outputs(PAIR["tokens"], TEXT)
    ids = torch.full(h.shape[:2], 0)
    assert torch.allclose(h - h_base, model.token_type_embeddings(ids), atol=1e-6)   # every token, pads too
    hi, _ = model.encoder_outputs(PAIR["images"], IMAGE)
    hi_base, _ = model.image_encoder(PAIR["images"])
    assert torch.allclose(hi - hi_base, model.token_type_embeddings(torch.full(hi.shape[:2], 1)), atol=1e-6)


def _twins(variant):
    torch.manual_seed(0)
    base = build_model(get_config("smoke", "baseline"))
    other = build_model(get_config("smoke", variant))
    missing, unexpected = other.load_state_dict(base.state_dict(), strict=False)
    assert not unexpected and all("token_type" in k or "tte_scale" in k for k in missing)
    return base.eval(), other.eval()


def test_layerscale_tte_leaves_the_shared_input_unchanged_at_init():
    base, ls = _twins("tte_after_ls")
    for inputs, modality in ((PAIR["images"], IMAGE), (PAIR["tokens"], TEXT)):
        h0, _ = base.encoder_outputs(inputs, modality)
        h1, _ = ls.encoder_outputs(inputs, modality)
        rel = (h1 - h0).abs().max() / h0.abs().max()
        assert 0 < rel <= 1e-5                                   # γ = 1e-5 · t_type, t ~ N(0, 0.02)
    assert torch.allclose(ls.tte_scale.gamma, torch.full_like(ls.tte_scale.gamma, 1e-5))


@pytest.mark.parametrize("variant,changes_encoder_input", [("tte_before", True), ("tte_after", False),
                                                           ("tte_after_ls", False)])
def test_where_the_tte_enters(variant, changes_encoder_input):
    base, other = _twins(variant)
    seen = {}
    for name, model in (("base", base), ("other", other)):
        model.image_encoder.blocks.blocks[0].register_forward_pre_hook(
            lambda m, a, name=name: seen.__setitem__(name, a[0]))
        model.encode_image(PAIR["images"])
    assert (not torch.allclose(seen["base"], seen["other"])) == changes_encoder_input
    h0, _ = base.encoder_outputs(PAIR["images"], IMAGE)
    h1, _ = other.encoder_outputs(PAIR["images"], IMAGE)
    assert not torch.allclose(h0, h1)                            # every variant changes the shared input


@pytest.mark.parametrize("variant", VARIANTS)
def test_forward_all_variants_demo(variant):
    cfg = get_config("demo", variant)
    model = build_model(cfg)
    img = torch.randn(2, 3, cfg.model.image.img_size, cfg.model.image.img_size)
    tok = torch.tensor([[0, 5, 6, 7, 2, 1], [0, 9, 2, 1, 1, 1]])
    fi, ft = model(img, tok)
    assert fi.x.shape == ft.x.shape == (2, cfg.model.dim) and fi.kd.shape == (2, cfg.teacher.dim)
    assert torch.allclose(fi.x.norm(dim=-1), torch.ones(2), atol=1e-5) and fi.x_fc1 is None


@pytest.mark.parametrize("variant", VARIANTS)
def test_forward_all_variants_thesis_shapes(variant):
    with torch.device("meta"):
        model = build_model(get_config("thesis", variant))
        fi, ft = model(torch.empty(2, 3, 224, 224), torch.zeros(2, 64, dtype=torch.long))
    assert fi.x.shape == (2, 768) and ft.kd.shape == (2, 768)


def test_thesis_parameter_counts_match_the_thesis():
    """EMKUM at the thesis scale (the August 2024 chapter's model, Data2Vec2 text encoder with its 50k-token
    embeddings): 132,328,705 parameters, split as docs/sources.md §1 gives them, each part within 1 % of the thesis's
    rounded figure; the final text's BERT-text model is the ≈ 117 M the thesis's appendix states."""
    with torch.device("meta"):
        base = build_model(get_config("thesis", "baseline"))
        rows = {r["part"]: r["parameters"] for r in parameter_table(build_model(get_config("thesis", "tte_after_ls")),
                                                                     build_teacher(get_config("thesis").teacher, 224))}
        bert = {r["part"]: r["parameters"] for r in parameter_table(
            build_model(get_config("thesis", "tte_after_ls", overrides={"model.text_encoder": "bert"})))}
    for part, thesis in (("image encoder", 43.1e6), ("text encoder", 81.5e6), ("shared part (all above)", 7.7e6),
                         ("EMKUM student", 132e6), ("teacher (frozen)", 86e6)):
        assert abs(rows[part] / thesis - 1) < 0.01, (part, rows[part])
    assert abs(bert["EMKUM student"] / 117e6 - 1) < 0.01 and abs(bert["text encoder"] / 66.4e6 - 1) < 0.01
    assert rows["token-type embeddings"] == 1536 and rows["TTE LayerScale"] == 768
    parts = {name: n_params(child) for name, child in base.named_children()}
    assert n_params(base) == 132_328_705
    assert (parts["image_encoder"], parts["text_encoder"], parts["shared"]) == (43_120_128, 81_527_040, 7_089_408)


def test_shared_block_is_timm_block_and_key_bias_is_inert():
    torch.manual_seed(0)
    block = SharedBlock(16, 4, 4.0, 0.2)
    x = torch.randn(2, 5, 16)
    out, fc1_cls = block(x)
    assert torch.allclose(out, super(SharedBlock, block).forward(x), atol=1e-6)
    assert torch.allclose(fc1_cls, block.mlp.fc1(block.norm2(x + block.ls1(block.attn(block.norm1(x)))))[:, 0],
                          atol=1e-6)
    assert torch.allclose(block.ls1.gamma, torch.full((16,), 0.2))
    out.square().sum().backward()
    k_bias_grad = block.attn.qkv.bias.grad[16:32]
    assert k_bias_grad.abs().max() < 1e-6 < block.attn.qkv.bias.grad[:16].abs().max()


def test_fc1_tap_option():
    cfg = get_config("smoke", overrides={"model.itc_fc1_tap": True})
    model = build_model(cfg)
    f = model.encode_text(PAIR["tokens"])
    assert f.x_fc1.shape == (3, 4 * cfg.model.dim) and model.logit_scale.numel() == 2


def test_teacher_is_frozen_and_stays_in_eval():
    cfg = get_config("smoke")
    teacher = build_teacher(cfg.teacher, 16)
    teacher.train()
    assert not teacher.training and not any(p.requires_grad for p in teacher.parameters())
    assert teacher(torch.randn(2, 3, 16, 16)).shape == (2, cfg.teacher.dim)


@pytest.mark.parametrize("modality", [TEXT, IMAGE])
def test_mome_routes_each_modality_only_through_its_own_expert(modality):
    model = build_model(get_config("smoke", "mome"))
    block = model.shared[0]
    inputs = PAIR["tokens"] if modality == TEXT else PAIR["images"]
    model.encode(inputs, modality).x.sum().backward()
    own, other = ((block.norm2, block.mlp), (block.norm2_image, block.mlp_image))[::1 if modality == TEXT else -1]

    def grads(*ms):
        return [p.grad for m in ms for p in m.parameters()]

    assert all(g is not None and g.abs().sum() > 0 for g in grads(*own))
    assert all(g is None for g in grads(*other))
    assert all(g is not None and g.abs().sum() > 0 for g in grads(block.attn))  # attention is shared


def test_mome_adds_one_feed_forward_expert():
    m = get_config("smoke").model
    extra = n_params(build_model(get_config("smoke", "mome"))) - n_params(build_model(get_config("smoke", "baseline")))
    hidden = int(m.dim * m.mlp_ratio)
    assert extra == m.shared_depth * (2 * m.dim + m.dim * hidden + hidden + hidden * m.dim + m.dim)


@pytest.mark.parametrize("preset", ["smoke", "demo"])
def test_the_contrastive_temperature_starts_at_the_configured_value(preset):
    model = build_model(get_config(preset, "baseline"))
    assert torch.allclose(model.logit_scale.exp(), torch.tensor([1 / 0.07]))          # τ = 0.07, as CLIP
    cfg = get_config(preset, overrides={"train.logit_scale_init": 2.0})
    assert torch.allclose(build_model(cfg).logit_scale, torch.tensor([2.0]))           # the config value is used


@pytest.mark.parametrize("seed", [0, 7])
def test_every_variant_starts_from_the_baselines_weights(seed):
    """Common random numbers: with one seed, every tensor a variant shares with the baseline is equal, and the
    caller's random stream after building is the same (batches, views and dropout do not shift)."""
    torch.manual_seed(seed)
    base = build_model(get_config("smoke", "baseline")).state_dict()
    after_base = torch.rand(3)
    for variant in VARIANTS:
        torch.manual_seed(seed)
        state = build_model(get_config("smoke", variant)).state_dict()
        assert torch.equal(torch.rand(3), after_base), variant
        shared = [k for k in state if k in base]
        assert len(shared) >= len(base) - 2, variant                  # only the image input norm may be missing
        assert all(torch.equal(state[k], base[k]) for k in shared), variant
    torch.manual_seed(seed + 1)
    assert not torch.equal(build_model(get_config("smoke", "baseline")).state_dict()["head.weight"],
                           base["head.weight"])


def test_added_parameters_come_from_their_own_stream():
    torch.manual_seed(0)
    a = build_model(get_config("smoke", "tte_after")).token_type_embeddings.weight
    torch.manual_seed(0)
    b = build_model(get_config("smoke", "tte_before")).token_type_embeddings.weight
    torch.manual_seed(1)
    c = build_model(get_config("smoke", "tte_after")).token_type_embeddings.weight
    assert torch.equal(a, b) and not torch.equal(a, c) and abs(a.std().item() - 0.02) < 0.01


def test_tte_ablation_removes_or_swaps_the_type_vectors():
    from thesis_lib.analysis import WithTypes
    torch.manual_seed(0)
    model = build_model(get_config("smoke", "tte_after")).eval()
    with torch.no_grad():
        model.token_type_embeddings.weight.copy_(torch.randn(2, model.cfg.dim) * 3)   # a TTE that matters
    plain, _ = model.image_encoder(PAIR["images"])
    h, _ = model.encoder_outputs(PAIR["images"], IMAGE)
    assert torch.allclose(h - plain, model.token_type_embeddings.weight[IMAGE].expand_as(h))
    assert torch.equal(model.encoder_outputs(PAIR["images"], IMAGE, "removed")[0], plain)
    removed = model.encode_image(PAIR["images"], "removed").x
    assert torch.equal(WithTypes(model, "removed").encode_image(PAIR["images"]).x, removed)   # the evaluation's view
    h_text_vector, _ = model.encoder_outputs(PAIR["images"], IMAGE, "swapped")
    assert torch.allclose(h_text_vector - plain, model.token_type_embeddings.weight[TEXT].expand_as(h))
    assert (removed - model.encode_image(PAIR["images"]).x).abs().max() > 1e-2         # the output depends on it
    with pytest.raises(ValueError):
        model.encode_image(PAIR["images"], "halved")


def test_the_controls():
    torch.manual_seed(0)
    shared = build_model(get_config("smoke", "tte_shared"))
    assert torch.equal(shared.type_vector(IMAGE), shared.type_vector(TEXT))          # no modality information
    assert n_params(shared) == n_params(build_model(get_config("smoke", "tte_after_ls")))         # same parameters
    noln = build_model(get_config("smoke", "tte_before_noln"))
    assert isinstance(noln.image_encoder.norm, torch.nn.Identity)
    assert isinstance(noln.text_encoder.norm, torch.nn.LayerNorm)                    # the text path keeps it
    x = PAIR["images"]
    expected = noln.image_encoder.blocks(noln.image_encoder.embed(x) + noln.type_vector(IMAGE))  # no LayerNorm
    assert torch.allclose(noln.encoder_outputs(x, IMAGE)[0], expected, atol=1e-6)


def test_text_dropout_acts_in_training_only_and_at_zero_changes_nothing():
    """``model.text_dropout`` (the thesis code's text dropout, docs/sources.md §9): the same weights, the same
    eval-mode outputs; in train mode it changes the text features only, differently on each call. At 0 (the default)
    a train-mode forward draws no random number and equals the eval-mode one."""
    from thesis_lib.errors import ConfigError
    from thesis_lib.models.emkum import EMKUM
    from thesis_lib.models.encoders import Data2Vec2TextEncoder
    from thesis_lib.models.representations import PostLNBlock
    torch.manual_seed(0)
    plain = build_model(get_config("smoke", "tte_before"))
    torch.manual_seed(0)
    dropped = build_model(get_config("smoke", "tte_before", overrides={"model.text_dropout": 0.1}))
    assert all(torch.equal(a, b) for a, b in zip(plain.state_dict().values(), dropped.state_dict().values()))
    rates = [(b.attn.attn_drop.p, b.attn.proj_drop.p, b.post_mlp_drop.p) for b in dropped.text_encoder.modules()
             if isinstance(b, PostLNBlock)]
    assert rates and all(r == (0.1, 0.1, 0.1) for r in rates) and dropped.text_encoder.dropout.p == 0.1
    assert all(b.post_mlp_drop.p == 0 for b in dropped.image_encoder.modules() if isinstance(b, PostLNBlock))
    with torch.no_grad():
        for model in (plain, dropped):
            model.eval()
        assert torch.equal(plain(**PAIR)[1].x, dropped(**PAIR)[1].x)                  # eval: no dropout
        plain.train(), dropped.train()
        state = torch.get_rng_state()
        text = plain(**PAIR)[1].x
        assert torch.equal(torch.get_rng_state(), state)                              # at 0: nothing drawn
        plain.eval()
        assert torch.equal(plain(**PAIR)[1].x, text)                                  # at 0: train = eval
        images, first = dropped(**PAIR)
        second = dropped(**PAIR)[1].x
        assert torch.equal(images.x, plain(**PAIR)[0].x)                              # the image path keeps none
        assert (first.x - text).abs().max() > 1e-4 and (first.x - second).abs().max() > 1e-4
    cfg = get_config("smoke", overrides={"model.text_dropout": 0.1}).model      # an encoder loaded from a file
    loaded = Data2Vec2TextEncoder(cfg.text, cfg.dim, cfg.text_depth, cfg.num_heads)
    assert EMKUM(cfg, 32, text_encoder=loaded, logit_scale_init=0.0).text_encoder.dropout.p == 0.1
    with pytest.raises(ConfigError):
        get_config("smoke", overrides={"model.text_encoder": "bert", "model.text_dropout": 0.1})
    with pytest.raises(ConfigError):
        get_config("smoke", overrides={"model.text_dropout": 1.0})
