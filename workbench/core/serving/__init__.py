"""Using a trained team: one episode per question (``team``), behind an OpenAI-compatible
HTTP API (``api``)."""
