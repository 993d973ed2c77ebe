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
from workbench.core.coordinator.backbone import (
    CPU_FORWARD_COST,
    PREFIX_COST,
    PREFIX_FACTOR,
    _batches,
    _Row,
)

TEXT = "Query:\nwhat is 12 + 30?\n\nThinker/sandbox:mathlete: add the tens, then the units."


def own_backbone(seed):
    model, tokenizer = build_tiny_lm(seed=seed)
    return Backbone("tiny", model=model, tokenizer=tokenizer)


def manual_feature(model, tokenizer, text, input="raw"):
    if input == "raw":  # the transcript's text, as the paper's released code feeds it
        ids = tokenizer(text)["input_ids"]
    else:
        ids = tokenizer.apply_chat_template(
            [{"role": "user", "content": text}],
            add_generation_prompt=True,
            tokenize=True,
            return_dict=True,
        )["input_ids"]
    out = model(torch.tensor([ids]), output_hidden_states=True)
    h = out.hidden_states[-1][0, -2].double().numpy()
    return h / np.sqrt(np.mean(h * h))


@pytest.mark.parametrize("input", ["raw", "chat"])
def test_feature_is_final_layer_penultimate_token_unit_rms(tiny_lm, input):
    model, tokenizer = tiny_lm
    backbone = Backbone("tiny", model=model, tokenizer=tokenizer, input=input)
    f = backbone.feature(TEXT)
    assert f.shape == (32,)
    np.testing.assert_allclose(f, manual_feature(model, tokenizer, TEXT, input), atol=1e-5)
    assert np.sqrt(np.mean(f * f)) == pytest.approx(1.0)
    # the two inputs are different token sequences, so different features
    other = "chat" if input == "raw" else "raw"
    assert not np.allclose(f, manual_feature(model, tokenizer, TEXT, other), atol=1e-3)
    # not the last token, not an earlier layer
    ids = backbone.encode(TEXT)
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


# --------------------------------------------------------------------------- batched forwards


def episode_transcripts(seed: int, n_tasks: int = 4, turns: int = 3) -> list[list[str]]:
    """Transcripts of a generation, turn by turn: per task two candidates that share the
    opening and diverge later, as the protocol's transcripts grow (``role/worker: text``)."""
    rng = np.random.default_rng(seed)
    words = "add the tens then units answer boxed check plan code return verify".split()
    steps: list[list[str]] = [[] for _ in range(turns)]
    for t in range(n_tasks):
        opening = f"Query:\nwhat is {t} + {rng.integers(100)}? " + " ".join(
            rng.choice(words, size=int(rng.integers(3, 30)))
        )
        for branch in range(2):
            text = opening
            steps[0].append(text)
            for k in range(1, turns):
                role = ["Thinker", "Worker", "Verifier"][(k + branch) % 3]
                reply = " ".join(rng.choice(words, size=int(rng.integers(2, 25))))
                text = f"{text}\n\n{role}/sandbox:w{branch}: {reply}"
                steps[k].append(text)
    return steps


def fidelity(model, tokenizer, steps, **kwargs):
    """Features of ``steps`` through the batched path (turn by turn, as a generation asks
    for them) and one by one with no cache (the reference), and the max abs difference."""
    batched = Backbone("b", model=model, tokenizer=tokenizer, **kwargs)
    reference = Backbone(
        "r", model=model, tokenizer=tokenizer, prefix_cache_bytes=0, input=batched.input
    )
    got, want = [], []
    for texts in steps:
        got.append(batched.features(texts))
        want.append(np.stack([reference.feature(t) for t in texts]))
    got, want = np.concatenate(got), np.concatenate(want)
    stats = batched.stats
    batched.close()
    reference.close()
    return got, want, float(np.abs(got - want).max()), stats


def decisions(features, n_workers=4, heads=8):
    weights = np.stack(
        [
            Head.random(HeadConfig(n_workers, features.shape[1]), s, 1.0).weights
            for s in range(heads)
        ]
    )
    return [
        (a.worker, a.role)
        for f in features
        for a in (act(logits, n_workers) for logits in apply_heads(weights, f))
    ]


@pytest.mark.parametrize("input", ["chat", "raw"])
def test_batched_continuations_match_one_by_one_features(input, monkeypatch):
    # a forward costs more than any padding here, so that each turn is one forward (mixed
    # rows); how rows are grouped to pad little is test_batches_group_rows_of_like_length...
    monkeypatch.setattr("workbench.core.coordinator.backbone.CPU_FORWARD_COST", 1e9)
    model, tokenizer = build_tiny_lm(seed=7)
    steps = episode_transcripts(seed=1)
    # a fresh transcript in the same forward as continuations of the third turn
    steps[2].append("Query:\ndef add(a, b): return a + b")
    got, want, diff, stats = fidelity(model, tokenizer, steps, input=input)
    print(f"tiny LM, {input} input: max abs diff {diff:.2e}")
    assert diff < 1e-4
    assert decisions(got) == decisions(want)
    rows = sum(len(s) for s in steps)
    # each turn's new rows went through the backbone together, over their prefixes
    assert stats.batches == len(steps) and stats.forwards < rows  # shared openings: cached
    assert stats.tokens_reused > stats.tokens_forwarded


def test_batch_token_budget_splits_forwards_without_changing_features():
    model, tokenizer = build_tiny_lm(seed=8)
    steps = episode_transcripts(seed=2)
    got, want, diff, stats = fidelity(model, tokenizer, steps, max_batch_tokens=300)
    assert diff < 1e-4
    assert stats.batches > len(steps)  # the budget split the forwards
    rows = [
        _Row(i, list(range(n)), reuse, None)
        for i, (n, reuse) in enumerate(
            [(40, 0), (90, 0), (120, 60), (130, 100), (400, 0), (30, 20), (70, 0)]
        )
    ]
    batches = _batches(rows, 300, CPU_FORWARD_COST)
    assert sorted(r.index for b in batches for r in b) == list(range(len(rows)))
    for b in batches:  # a row longer than the budget goes alone
        width = max(len(r.ids) - r.reuse for r in b)
        assert len(b) * width <= 300 or len(b) == 1
        prefix = max(r.reuse for r in b)
        assert len(b) * (prefix + width) <= PREFIX_FACTOR * 300 or len(b) == 1


def test_batches_group_rows_of_like_length_and_stay_large():
    """Forwards pad little (rows of like new length together) yet stay large: 64 rows of
    two new lengths make two forwards, not 64, and never one padded to the longer."""
    lengths = [20] * 32 + [200] * 32
    rows = [_Row(i, list(range(n + 50)), 50, None) for i, n in enumerate(lengths)]
    batches = _batches(rows, 8192, CPU_FORWARD_COST)
    assert [sorted({len(r.ids) - r.reuse for r in b}) for b in batches] == [[20], [200]]
    assert [len(b) for b in batches] == [32, 32]


def _cost(batches, forward_cost):
    return sum(
        forward_cost
        + len(b) * max(len(r.ids) - r.reuse for r in b)
        + PREFIX_COST * len(b) * max(r.reuse for r in b)
        for b in batches
    )


def test_batches_are_the_cheapest_grouping_of_the_sorted_rows():
    """A few short rows join longer ones when their padding costs less than a forward of
    their own (a later turn's rows: 12 to 20 new tokens over their prefixes make one
    forward, not three); and on random rows the grouping costs no more than the best of
    every way to cut the sorted rows (checked by brute force)."""
    rows = [
        _Row(i, list(range(reuse + n)), reuse, None)
        for i, (n, reuse) in enumerate([(12, 150)] * 3 + [(14, 180)] * 3 + [(20, 120)] * 2)
    ]
    assert [len(b) for b in _batches(rows, 8192, CPU_FORWARD_COST)] == [8]
    rng = np.random.default_rng(0)
    for trial in range(30):
        n = int(rng.integers(1, 9))
        rows = [
            _Row(i, list(range(int(rng.integers(2, 120)) + reuse)), reuse, None)
            for i, reuse in enumerate(int(x) for x in rng.integers(0, 200, n))
        ]
        forward_cost = float(rng.choice([1, 16, 64, 1000]))
        got = _batches(rows, 400, forward_cost)
        assert sorted(r.index for b in got for r in b) == list(range(n))
        ordered = sorted(rows, key=lambda r: (len(r.ids) - r.reuse, r.reuse))
        best = float("inf")
        for mask in range(2 ** (n - 1)):  # every way to cut the sorted rows
            cuts = [0] + [i + 1 for i in range(n - 1) if mask >> i & 1] + [n]
            groups = [ordered[a:b] for a, b in zip(cuts[:-1], cuts[1:], strict=True)]
            if all(
                len(g) == 1
                or (
                    len(g) * max(len(r.ids) - r.reuse for r in g) <= 400
                    and len(g) * (max(r.reuse for r in g) + max(len(r.ids) - r.reuse for r in g))
                    <= PREFIX_FACTOR * 400
                )
                for g in groups
            ):
                best = min(best, _cost(groups, forward_cost))
        assert _cost(got, forward_cost) <= best + 1e-9, trial


def test_prefix_cache_keeps_its_byte_budget_and_drops_extended_entries():
    model, tokenizer = build_tiny_lm(seed=9)
    steps = episode_transcripts(seed=3, n_tasks=6, turns=4)
    one_row = Backbone("t", model=model, tokenizer=tokenizer)
    one_row.features(steps[0][:1])
    budget = 3 * one_row._prefixes.nbytes  # about three openings
    small = Backbone("t", model=model, tokenizer=tokenizer, prefix_cache_bytes=budget)
    for texts in steps:
        small.features(texts)
        assert small._prefixes.nbytes <= budget
    roomy = Backbone("t", model=model, tokenizer=tokenizer)
    for texts in steps:
        roomy.features(texts)
    # a later turn replaces the entry it extended: one entry per transcript branch
    assert len(roomy._prefixes) == len(steps[-1])


def test_batched_features_of_the_offline_model_match_one_by_one(offline_backbone):

    model, tokenizer = offline_backbone.model, offline_backbone.tokenizer
    steps = episode_transcripts(seed=4, n_tasks=3, turns=3)
    for input, name in (("chat", "chat template"), ("raw", "raw text")):
        got, want, diff, _ = fidelity(model, tokenizer, steps, input=input)
        print(f"SmolLM2-135M fp32, {name}: max abs diff {diff:.2e}")
        assert diff < 1e-3
        assert decisions(got, heads=16) == decisions(want, heads=16)


def test_closing_a_backbone_gives_the_model_back_without_its_svf_offsets():
    """Backbones over one model (a process's shared model, the test fixtures) each assume
    the original weights: one that applied SVF offsets undoes them when it closes, so the
    next one's features are the model's own (a left-over offset once changed a later
    run's decisions)."""
    model, tokenizer = build_tiny_lm(seed=11)
    original = {k: v.clone() for k, v in model.state_dict().items()}
    first = Backbone("t", model=model, tokenizer=tokenizer)
    want = first.feature(TEXT)
    delta = np.random.default_rng(0).normal(0, 0.5, first.svf().n_params)
    shifted = first.feature(TEXT, delta)
    assert not np.allclose(shifted, want)
    assert model.config._attn_implementation == "workbench_sdpa_gqa"  # while in use
    first.close()
    assert all(torch.equal(v, original[k]) for k, v in model.state_dict().items())
    assert model.config._attn_implementation == "sdpa"
    second = Backbone("t", model=model, tokenizer=tokenizer)
    np.testing.assert_array_equal(second.feature(TEXT), want)
    second.close()


def test_bf16_mixed_backbone_recomputes_near_tie_argmax_decisions_in_fp32(monkeypatch):
    """bf16-mixed features are fast and close to fp32; an argmax decision near a tie is
    taken on the fp32 feature of the same weights (``exact=True``), cached on its own."""
    model, tokenizer = build_tiny_lm(seed=9)
    fp32 = Backbone("t", model=model, tokenizer=tokenizer)
    mixed = Backbone("t", model=model, tokenizer=tokenizer, precision="bf16-mixed")
    assert (fp32.precision, mixed.precision) == ("fp32", "bf16-mixed")
    assert fp32.feature_error == 0 and mixed.feature_error > 0
    fast, exact, want = mixed.feature(TEXT), mixed.feature(TEXT, exact=True), fp32.feature(TEXT)
    np.testing.assert_allclose(exact, want, atol=1e-5)  # the autocast off: fp32
    assert np.abs(fast - want).max() > 1e-4  # and on: another arithmetic
    assert np.corrcoef(fast, want)[0, 1] > 0.99
    # the batched path gives autocast's own numbers, bit for bit
    with torch.inference_mode(), torch.autocast("cpu", dtype=torch.bfloat16):
        h = model(torch.tensor([mixed.encode(TEXT)]), output_hidden_states=True).hidden_states
    h = h[-1][0, -2].double().numpy()
    np.testing.assert_array_equal(fast, h / np.sqrt(np.mean(h * h)))
    assert mixed.stats.exact == 1 and mixed.stats.batches == 2
    assert mixed.stats.exact_tokens == len(mixed.encode(TEXT))
    mixed.feature(TEXT, exact=True)  # cached apart from the bf16-mixed feature
    assert mixed.stats.batches == 2
    # its KV prefix too: a later turn's recheck forwards only the turn's new tokens
    assert len(mixed._exact_prefixes) == 1 and len(mixed._prefixes) == 1
    grown = TEXT + " Then check."
    mixed.feature(grown, exact=True)
    assert mixed.stats.exact_tokens - len(mixed.encode(TEXT)) < len(mixed.encode(grown)) // 2
    np.testing.assert_allclose(mixed.feature(grown, exact=True), fp32.feature(grown), atol=1e-5)

    # a head whose workers 0 and 1 nearly tie: fp32 prefers 1 by 1e-3, the bf16-mixed
    # feature 0 by about 2e-3 (their rows differ along the bf16 error, across the feature)
    unit = want / np.linalg.norm(want)
    error = fast - want
    across = error - (error @ unit) * unit
    v = -3e-3 * across / (across @ fast) + 1e-3 * want / (want @ want)
    head = Head.random(HeadConfig(3, 32), seed=0, scale=1.0)
    head.weights[0], head.weights[2] = 0.1 * want, -0.1 * want
    head.weights[1] = head.weights[0] + v
    assert (head.decide(want).worker, head.decide(fast).worker) == (1, 0)
    # within the error bound of bf16-mixed on SmolLM2 (this tiny random LM errs more)
    monkeypatch.setattr("workbench.core.coordinator.backbone.BF16_MIXED_FEATURE_ERROR", 1.0)
    assert head.near_tie(fast, mixed.feature_error)
    coordinator = Coordinator(mixed, head)
    assert asyncio.run(coordinator.adecide(TEXT)).worker == 1  # fp32's decision
    assert coordinator.decide(TEXT) == Coordinator(fp32, head).decide(TEXT)
    other = Backbone("t2", model=model, tokenizer=tokenizer, precision="bf16-mixed")
    calm = Coordinator(other, head)
    # a sampled decision (training) takes the fast feature
    asyncio.run(calm.adecide(TEXT, np.random.default_rng(0)))
    assert other.stats.exact == 0
    # bf16 weights have no fp32 to recompute with
    bf16 = Backbone("t", model=build_tiny_lm(seed=9)[0].to(torch.bfloat16), tokenizer=tokenizer)
    assert bf16.feature_error == 0
    with pytest.raises(ValueError, match="exact \\(fp32\\) feature.*bf16"):
        bf16.feature(TEXT, exact=True)
    with pytest.raises(ValueError, match="precision 'bf16-mixed' asked for a model whose"):
        Backbone("t", model=bf16.model, tokenizer=tokenizer, precision="bf16-mixed")
    for b in (fp32, mixed, other, bf16):
        b.close()


def test_rechecks_go_first_so_their_episodes_join_the_next_forward():
    """fp32 rechecks pending with other requests are forwarded first, alone; the other
    requests wait for the episodes the rechecks answered to ask their next decision, and
    all go through one forward (not the rechecked episodes one forward behind)."""
    model, tokenizer = build_tiny_lm(seed=12)
    mixed = Backbone("t", model=model, tokenizer=tokenizer, precision="bf16-mixed")
    texts = [f"{TEXT} {i}" for i in range(4)]

    async def episode(i: int, recheck: bool) -> None:
        await mixed.afeature(texts[i], exact=recheck)
        if recheck:  # its next turn
            await mixed.afeature(texts[i] + " Next.")

    async def generation() -> None:
        await asyncio.gather(*(episode(i, recheck=i < 2) for i in range(4)))

    asyncio.run(generation())
    # one fp32 forward of the two rechecks, then one of the two others with both next turns
    assert mixed.stats.exact == 2
    assert mixed.stats.batches == 2 and mixed.stats.forwards == 6
    mixed.close()


def test_bf16_mixed_weight_copies_follow_svf_offsets():
    """bf16-mixed casts the linear weights to bf16 once and keeps the copies; SVF offsets
    change weights in place, and the copies of those follow (a stale copy would give the
    features of the weights before the offsets)."""
    model, tokenizer = build_tiny_lm(seed=13)
    mixed = Backbone("t", model=model, tokenizer=tokenizer, precision="bf16-mixed")
    delta = np.random.default_rng(1).normal(0, 0.5, mixed.svf().n_params)
    plain = mixed.feature(TEXT)  # casts the copies of the original weights
    shifted = mixed.feature(TEXT + " Again.", delta)
    back = mixed.feature(TEXT + " Once more.")
    mixed.close()
    fresh = Backbone("t", model=model, tokenizer=tokenizer, precision="bf16-mixed")
    np.testing.assert_array_equal(fresh.feature(TEXT + " Again.", delta), shifted)
    np.testing.assert_array_equal(fresh.feature(TEXT + " Once more."), back)
    np.testing.assert_array_equal(fresh.feature(TEXT), plain)
    fresh.close()


def test_an_exploring_start_widens_only_the_first_sampled_decision_of_its_episode(tiny_backbone):
    """``ExploringStart`` (optimizer.exploring_starts): the episode's first sampled
    decision is drawn from the policy's distributions mixed with uniform ones (share 1:
    uniform whatever the head says), recorded with the mixed distributions; later
    decisions and argmax decisions are the policy's own; and the episode's generator makes
    the same draws as without it, so a tiny share chooses what the policy alone would
    (candidates sharing random numbers still draw alike)."""
    from workbench.core.policies import ExploringStart

    coord = Coordinator.untrained(tiny_backbone, n_workers=4, seed=0, scale=30.0)
    own = coord.decide(TEXT)  # argmax; at this scale the head is nearly certain
    assert max(own.worker_probs) > 0.99 and max(own.role_probs) > 0.99

    def decisions(share, seed):
        policy, rng = ExploringStart(coord, share), np.random.default_rng(seed)
        return [asyncio.run(policy.adecide(TEXT, rng)) for _ in range(2)]

    firsts, seconds = zip(*(decisions(1.0, s) for s in range(400)), strict=True)
    assert {a.worker_probs for a in firsts} == {(0.25,) * 4}
    assert {a.role_probs for a in firsts} == {(1 / 3,) * 3}
    np.testing.assert_allclose(np.bincount([a.worker for a in firsts]) / 400, 0.25, atol=0.07)
    np.testing.assert_allclose(np.bincount([a.role for a in firsts]) / 400, 1 / 3, atol=0.08)
    assert all(a.worker_probs == own.worker_probs for a in seconds)  # the head's own again

    half = decisions(0.5, 0)[0]
    expected = [0.5 * p + 0.125 for p in own.worker_probs]
    np.testing.assert_allclose(half.worker_probs, expected)

    policy = ExploringStart(coord, 1.0)
    assert asyncio.run(policy.adecide(TEXT)) == own  # argmax (validation) is never widened
    assert policy.context_fits(TEXT) == coord.context_fits(TEXT)

    soft = Coordinator.untrained(tiny_backbone, n_workers=4, seed=1, scale=1.0)
    for seed in range(50):
        widened = asyncio.run(
            ExploringStart(soft, 1e-12).adecide(TEXT, np.random.default_rng(seed))
        )
        alone = asyncio.run(soft.adecide(TEXT, np.random.default_rng(seed)))
        assert (widened.worker, widened.role) == (alone.worker, alone.role)
