"""Real components the tests start and stop themselves: a fault-injecting loopback HTTP
server, a `transformers serve` OpenAI-compatible server, a Secret Service keyring."""
