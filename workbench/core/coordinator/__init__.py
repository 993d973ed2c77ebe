"""The coordinator: a frozen backbone's feature, a tiny linear head, and the policy.

- Feature: the final layer's hidden state at the *penultimate* token of the transcript
  (docs/METHOD.md), normalised to unit RMS. The backbone reads the transcript's raw text
  (``input="raw"``, the paper's released code) or the transcript as a chat message
  (``input="chat"``); a transcript longer than its context loses its oldest turns first
  (``transcript.fit_transcript``).
- Head: one bias-free linear map ``W`` of shape ``(L + 3, d)``; the first ``L`` logits
  choose the worker, the last 3 the role, as two independent softmax distributions.
- Acting: sample (seeded) while training, argmax when evaluating; every decision carries
  both probability vectors.
- Feature cache: with a frozen backbone a transcript's feature does not depend on the
  candidate, so each distinct (SVF vector, transcript) is forwarded once.
- Prefix reuse: transcripts only grow; the KV cache of an earlier transcript that is a
  token prefix of the new one is reused, so a later turn costs its new tokens only.
- SVF (optional): singular-value offsets for the embeddings and one late layer.

The package: ``head`` (HeadConfig, Head, Action, act, explore), ``svf`` (SVF), ``backbone``
(Backbone: features, batching, caches), ``prefix_cache`` (KV caches of earlier
transcripts), ``rows`` (one batched forward's KV buffer, grouped-query attention and bf16
weight copies; loaded with torch), ``policy`` (Coordinator).
"""

from workbench.core.coordinator.backbone import Backbone, FeatureStats
from workbench.core.coordinator.head import (
    N_ROLES,
    Action,
    Head,
    HeadConfig,
    act,
    apply_heads,
    explore,
    softmax,
)
from workbench.core.coordinator.policy import Coordinator
from workbench.core.coordinator.svf import SVF

__all__ = [
    "N_ROLES",
    "SVF",
    "Action",
    "Backbone",
    "Coordinator",
    "FeatureStats",
    "Head",
    "HeadConfig",
    "softmax",
    "act",
    "explore",
    "apply_heads",
]
