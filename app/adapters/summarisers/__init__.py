"""The compactor's summarisers: what it asks of one and gets back (base), the built-in
extractive one, the embedded default (builtin), and the tenant's LLM gateway with the
compression prompt (gateway)."""
