"""Load shapes: closed loop (fixed concurrency) and open loop (Poisson arrivals)."""
