import asyncio

import numpy as np
import pytest
import torch

from tests.conftest import build_tiny_lm
from workbench.core.coordinator import (
    SVF,
    Action,
    Backbone,
    Coordinator,
    Head,
    HeadConfig,
    act,
    apply_heads,
)

TEXT = "Query:\nwhat is 12 + 30?\n\nThinker/sandbox:mathlete: add the tens, then the units."


def own_backbone(seed):
    model, tokenizer = build_tiny_lm(seed=seed)
    return Backbone("tiny", model=model, tokenizer=tokenizer)


def manual_feature(model, tokenizer, text):
    ids = tokenizer.apply_chat_template(
        [{"role": "user", "content": text}],
        add_generation_prompt=True,
        tokenize=True,
        return_dict=True,
    )["input_ids"]
    out = model(torch.tensor([ids]), output_hidden_states=True)
    h = out.hidden_states[-1][0, -2].double().numpy()
    return h / np.sqrt(np.mean(h * h))


def test_feature_is_final_layer_penultimate_token_unit_rms(tiny_backbone, tiny_lm):
    model, tokenizer = tiny_lm
    f = tiny_backbone.feature(TEXT)
    assert f.shape == (32,)
    np.testing.assert_allclose(f, manual_feature(model, tokenizer, TEXT), atol=1e-5)
    assert np.sqrt(np.mean(f * f)) == pytest.approx(1.0)
    # not the last token, not an earlier layer
    ids = tiny_backbone.encode(TEXT)
    out = model(torch.tensor([ids]), output_hidden_states=True)
    last = out.hidden_states[-1][0, -1].double().numpy()
    assert not np.allclose(f, last / np.sqrt(np.mean(last**2)), atol=1e-3)


def test_feature_cache_second_identical_transcript_does_no_forward(tiny_backbone):
    first = tiny_backbone.feature(TEXT)
    forwards = tiny_backbone.stats.forwards
    again = tiny_backbone.features([TEXT] * 32)
    assert tiny_backbone.stats.forwards == forwards
    assert tiny_backbone.stats.cache_hits == 32
    np.testing.assert_array_equal(again[5], first)


def test_batched_and_prefix_reused_features_match_fresh_ones(tiny_lm):
    model, tokenizer = tiny_lm
    texts = [TEXT, TEXT + " Then check.", "Query:\ndef add(a, b): return a + b"]
    fresh = Backbone("tiny", model=model, tokenizer=tokenizer, prefix_cache_bytes=0)
    expected = np.stack([fresh.feature(t) for t in texts])
    batched = Backbone("tiny", model=model, tokenizer=tokenizer)
    np.testing.assert_allclose(batched.features(texts), expected, atol=1e-5)
    # a grown transcript reuses the KV cache of its prefix: only new tokens are forwarded
    grown = TEXT + "\n\nWorker/local:smollm2: The answer is \\boxed{42}."
    before = batched.stats.tokens_forwarded
    f = batched.feature(grown)
    np.testing.assert_allclose(f, fresh.feature(grown), atol=1e-5)
    assert batched.stats.tokens_reused > 0
    assert batched.stats.tokens_forwarded - before < len(batched.encode(grown)) // 2
    fresh.close()
    batched.close()


def test_afeature_batches_concurrent_requests(tiny_backbone):
    async def many():
        return await asyncio.gather(*(tiny_backbone.afeature(f"{TEXT} {i}") for i in range(8)))

    rows = asyncio.run(many())
    assert len(rows) == 8 and all(r.shape == (32,) for r in rows)
    assert tiny_backbone.stats.forwards == 8


def test_head_shapes_and_flat_vector():
    cfg = HeadConfig(n_workers=7, hidden_size=1024)
    assert cfg.shape == (10, 1024) and cfg.n_params == 10_240  # the paper's head
    head = Head.random(cfg, seed=1)
    v = head.get_flat()
    head.set_flat(v * 2)
    np.testing.assert_array_equal(head.get_flat(), v * 2)
    with pytest.raises(ValueError, match=r"expected \(10240,\).*7 workers"):
        head.set_flat(np.zeros(10_000))
    with pytest.raises(ValueError, match="NaN"):
        head.set_flat(np.full(10_240, np.nan))


def test_argmax_vs_seeded_sampling():
    logits = np.array([0.0, 1.0, 0.5, 2.0, 0.0, -1.0])  # 3 workers, 3 roles
    a = act(logits, 3)
    assert (a.worker, a.role) == (1, 0)
    assert sum(a.worker_probs) == pytest.approx(1) and sum(a.role_probs) == pytest.approx(1)
    draws = [act(logits, 3, np.random.default_rng(s)) for s in range(3000)]
    again = [act(logits, 3, np.random.default_rng(s)) for s in range(20)]
    assert [(d.worker, d.role) for d in draws[:20]] == [(d.worker, d.role) for d in again]
    freq = np.bincount([d.worker for d in draws], minlength=3) / len(draws)
    np.testing.assert_allclose(freq, a.worker_probs, atol=0.04)


def test_apply_heads_matches_one_by_one():
    rng = np.random.default_rng(0)
    weights, feature = rng.normal(size=(32, 6, 64)), rng.normal(size=64)
    batched = apply_heads(weights, feature)
    for k in range(32):
        np.testing.assert_allclose(batched[k], weights[k] @ feature)


def test_coordinator_decides_with_both_distributions(tiny_backbone):
    coord = Coordinator.untrained(tiny_backbone, n_workers=3, seed=0, scale=1.0)
    a = coord.decide(TEXT)
    assert isinstance(a, Action) and len(a.worker_probs) == 3 and len(a.role_probs) == 3
    assert a.worker == int(np.argmax(a.worker_probs))
    assert asyncio.run(coord.adecide(TEXT)) == a


def test_svf_zero_delta_restores_weights_exactly_and_ties_once():
    model, tokenizer = build_tiny_lm(tie_word_embeddings=True, seed=3)
    original = {k: v.clone() for k, v in model.state_dict().items()}
    svf = SVF(model, layer=-2)
    names = [t.name for t in svf.targets]
    assert names[0] == "embed_tokens" and not any("lm_head" in n for n in names)
    assert len(names) == 8  # embeddings + q k v o gate up down
    # embeddings 32, q 32, k 16, v 16, o 32, gate 32, up 32, down 32
    assert svf.n_params == 32 * 6 + 16 * 2
    # the formula at delta = 0 reconstructs the weight
    for t in svf.targets:
        torch.testing.assert_close(
            SVF.reconstruct(t, np.zeros(t.s.shape[0])).float(), t.original, atol=1e-5, rtol=1e-5
        )
    delta = np.random.default_rng(0).normal(0, 0.1, svf.n_params)
    svf.apply(delta)
    assert not torch.equal(model.model.embed_tokens.weight, original["model.embed_tokens.weight"])
    assert model.lm_head.weight.data_ptr() == model.model.embed_tokens.weight.data_ptr()
    svf.apply(np.zeros(svf.n_params))
    for k, v in model.state_dict().items():
        assert torch.equal(v, original[k]), k


def test_svf_changes_features_and_keys_the_caches():
    model, tokenizer = build_tiny_lm(seed=4)
    original = {k: v.clone() for k, v in model.state_dict().items()}
    backbone = Backbone("tiny", model=model, tokenizer=tokenizer)
    base = backbone.feature(TEXT)
    delta = np.random.default_rng(1).normal(0, 0.3, backbone.svf().n_params)
    # (a uniform offset would change nothing: the sum(S) renormalisation cancels it)
    adapted = backbone.feature(TEXT, delta)
    assert not np.allclose(base, adapted, atol=1e-4)
    forwards = backbone.stats.forwards
    np.testing.assert_array_equal(backbone.feature(TEXT), base)  # cache hit under its own key
    assert backbone.stats.forwards == forwards
    # a grown transcript under the original weights must not reuse the adapted KV cache
    grown = TEXT + " And verify."
    np.testing.assert_allclose(
        backbone.feature(grown),
        Backbone("t", model=model, tokenizer=tokenizer, prefix_cache_bytes=0).feature(grown),
        atol=1e-5,
    )
    for k, v in model.state_dict().items():
        assert torch.equal(v, original[k]), k


def test_concurrent_candidates_with_different_svf_vectors_get_their_own_features():
    backbone = own_backbone(seed=5)
    n = backbone.svf().n_params
    deltas = [None] + [np.random.default_rng(s).normal(0, 0.3, n) for s in range(3)]
    expected = [backbone.feature(TEXT, d) for d in deltas]
    other = own_backbone(seed=5)  # its own copy of the weights: SVF changes them in place

    async def all_at_once():
        return await asyncio.gather(*(other.afeature(TEXT, d) for d in deltas * 3))

    for got, want in zip(asyncio.run(all_at_once()), expected * 3, strict=True):
        np.testing.assert_allclose(got, want, atol=1e-6)
    backbone.close()
    other.close()
