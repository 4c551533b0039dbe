"""Storage: table models, the control database and the per-tenant databases."""
