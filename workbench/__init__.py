"""Trinity Workbench: build, train and inspect evolved LLM coordinators (TRINITY)."""

__version__ = "0.1.0"
