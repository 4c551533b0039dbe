"""Storage of the change feed: the outbox of changes (outbox) and webhook endpoints and their
deliveries (webhooks)."""
