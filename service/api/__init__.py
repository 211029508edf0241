"""HTTP blueprints, one per concern: front end, operator, health."""
