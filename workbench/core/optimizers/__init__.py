"""Optimizers of a coordinator's parameters: separable CMA-ES (the default) and the
baselines (random search, REINFORCE, imitation), all behind one interface
(``base.Optimizer``) so they share the trainer's loop, budget, events and checkpoints."""
