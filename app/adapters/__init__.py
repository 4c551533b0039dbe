"""Adapters to the outside: the tenant's LLM gateway, DLP, the built-in summariser."""
