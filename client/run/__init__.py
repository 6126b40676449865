"""A whole ``speedbench run``: manifest, sweep over load points, resume, counters, joins, results."""
