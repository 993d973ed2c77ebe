"""Worker providers: the Worker protocol, the provider registry and built-in workers."""
