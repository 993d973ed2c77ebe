"""Training a coordinator: the trainer's loop (``trainer``), its events and stop token
(``events``), the search basis (``basis``) and the per-generation checkpoint
(``checkpoint``)."""
