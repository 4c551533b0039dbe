"""The GraphQL surface: types, inputs and resolvers over app.services (no domain logic)."""
