"""The math behind the SPEED-Bench metrics: small pure numpy functions, one concept per module."""
