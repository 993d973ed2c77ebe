"""Features kept on disk (coordinator/feature_store.py): computed once, read back bit for
bit by a new backbone (no forward), computed again when the model's weights, its
precision or its reading of a transcript change, never kept for a model nothing
fingerprints."""

from __future__ import annotations

import numpy as np
import pytest

from tests.conftest import build_tiny_lm
from workbench.core.coordinator import Backbone
from workbench.core.coordinator.feature_store import FeatureStore, stored_features

TEXTS = [f"Query:\nWhat is {i} + {i * 7}?" for i in range(12)]


def _save(folder, seed):
    model, tokenizer = build_tiny_lm(seed=seed)
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)


@pytest.fixture()
def model_dir(tmp_path):
    folder = tmp_path / "model"
    _save(folder, seed=1)
    return folder


def _backbone(folder, **kw) -> Backbone:
    return Backbone(str(folder), device="cpu", **kw)


def test_a_feature_is_computed_once_and_read_back_bit_for_bit(tmp_path, model_dir):
    with FeatureStore(tmp_path / "f.sqlite3") as store:
        first = _backbone(model_dir, precision="fp32")
        try:
            rows = stored_features(first, store, TEXTS[:8])
            assert first.stats.forwards == 8
            assert store.count(first.feature_namespace()) == 8
        finally:
            first.close()
        again = _backbone(model_dir, precision="fp32")  # a new process's backbone
        try:
            seen = []
            mixed = stored_features(again, store, TEXTS, progress=lambda d, t: seen.append(d))
            assert again.stats.forwards == 4  # only the 4 texts not kept yet
            assert np.array_equal(mixed[:8], rows)  # the very same bits
            assert seen[0] == 8 and seen[-1] == 12
            # primed: an episode's feature request costs no forward
            assert np.array_equal(again.feature(TEXTS[0]), rows[0])
            assert again.stats.forwards == 4
        finally:
            again.close()


def test_changed_weights_precision_or_input_are_not_read_for_the_old(tmp_path, model_dir):
    with FeatureStore(tmp_path / "f.sqlite3") as store:
        old = _backbone(model_dir, precision="fp32")
        try:
            before = stored_features(old, store, TEXTS[:4])
            namespace = old.feature_namespace()
        finally:
            old.close()
        chat = _backbone(model_dir, precision="fp32", input="chat")
        try:
            assert chat.feature_namespace() != namespace
            stored_features(chat, store, TEXTS[:4])
            assert chat.stats.forwards == 4
        finally:
            chat.close()
        mixed = _backbone(model_dir, precision="bf16-mixed")
        try:
            assert mixed.feature_namespace() != namespace
            assert mixed.feature_namespace(exact=True) == namespace  # its fp32 is fp32's
            stored_features(mixed, store, TEXTS[:4], exact=True)
            assert mixed.stats.forwards == 0
        finally:
            mixed.close()
        _save(model_dir, seed=2)  # new weights saved over the old ones
        new = _backbone(model_dir, precision="fp32")
        try:
            assert new.feature_namespace() != namespace
            after = stored_features(new, store, TEXTS[:4])
            assert new.stats.forwards == 4
            assert not np.allclose(after, before)
        finally:
            new.close()


def test_a_model_handed_in_keeps_nothing(tmp_path, tiny_backbone):
    assert tiny_backbone.feature_namespace() is None
    with FeatureStore(tmp_path / "f.sqlite3") as store:
        stored_features(tiny_backbone, store, TEXTS[:3])
        assert store.count() == 0
