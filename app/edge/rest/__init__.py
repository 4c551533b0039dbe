"""REST edge: the product's documented /memory routes, as thin HTTP over app.services.

models (pydantic), parsing, handlers, problems (problem+json), encoding, routing.
"""
