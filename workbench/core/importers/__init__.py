"""Importers of the formats users already have their models' outputs in: each model's file
becomes one worker of a recorded pool, and the questions they answered one suite.

- ``mmlu_pro``: MMLU-Pro's published per-model outputs (the official zips, or the JSON
  inside them);
- ``lm_eval``: lm-evaluation-harness ``--log_samples`` files;
- ``build``: what both share, written once: the questions of every file checked to be the
  same, the seeded split, the checks of the suite and of the recorded answers (the
  functions a JSONL suite and a JSONL answers file go through), the writing of both with
  progress;
- ``download``: MMLU-Pro's files fetched from their repository (progress, SHA-256,
  resumable).

docs/guides/recorded-pools.md says what each format's fields become.
"""
