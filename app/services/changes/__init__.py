"""Change events: the vocabulary every surface announces changes in, read from the outbox
(change_events), live feeds for subscribers (subscribers), and webhooks: endpoints
(webhooks) and the worker's deliveries (delivery)."""
