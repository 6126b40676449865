"""Sending the requests: one streamed request, one worker's phase in an event loop, worker
processes, Ray actors on a cluster."""
