"""Clock offsets between the ``--ray`` driver and each Ray worker, measured like NTP.

One probe: the driver reads its clocks (wall ``t0``, monotonic ``m0``), asks the worker for its
own (wall ``w``, monotonic ``v``) and reads its clocks again (``t1``, ``m1``). The worker read its
clocks at some instant between the driver's two reads, so

    offset = w - (t0 + t1) / 2      (the worker's wall clock minus the driver's)
    shift  = (m0 + m1) / 2 - v      (add to a worker monotonic time: the driver's monotonic time)

are each wrong by at most half the round trip, ``(t1 - t0) / 2`` (the NTP bound). Of several
probes the one with the shortest round trip gives the tightest bound.

Per-request times stay on the worker's monotonic clock; ``shift`` only moves a whole worker's
records onto the driver's timeline (differences inside a record are unchanged), which is what
run-level spans (a point's start, end, achieved concurrency) compare across workers. A worker on
the driver's own host (same kernel boot id) shares its clocks: its shift is exactly 0.

Bounds (a worker outside them fails the run before it sends a request):
``MAX_CLOCK_OFFSET_S``: the worker's wall clock may be at most this far from the driver's,
uncertainty included; further apart, the hosts are not time-synchronised (NTP/chrony) and their
clocks drift apart during the run. ``MAX_CLOCK_UNCERTAINTY_S``: half the best round trip; above
it the offset is not known well enough to line up the workers' records.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass

MAX_CLOCK_OFFSET_S = 0.1
MAX_CLOCK_UNCERTAINTY_S = 0.01
CLOCK_PROBES = 16

# (t0_wall, m0_mono, worker_wall, worker_mono, t1_wall, m1_mono), all in nanoseconds
Probe = tuple[int, int, int, int, int, int]


class ClockOffsetError(RuntimeError):
    pass


@dataclass(frozen=True)
class ClockEstimate:
    """One worker's clocks against the driver's (nanoseconds; see the module doc).

    offset_ns / measured_shift_ns: the best probe's estimates; uncertainty_ns: their bound
    (half its round trip rtt_ns); shift_ns: what is applied to the worker's records (0 on the
    driver's own host, else measured_shift_ns).
    """

    offset_ns: int
    measured_shift_ns: int
    uncertainty_ns: int
    rtt_ns: int
    same_host: bool
    shift_ns: int
    probes: int

    def to_dict(self) -> dict:
        return asdict(self)


def estimate_clock(probes: list[Probe], same_host: bool = False) -> ClockEstimate:
    """The estimate from the probe with the shortest round trip (ties: the first)."""
    if not probes:
        raise ValueError("no clock probes")
    for probe in probes:
        if probe[4] < probe[0] or probe[5] < probe[1]:
            raise ValueError(f"clock probe {probe}: the driver's clock ran backwards")
    t0, m0, wall, mono, t1, m1 = min(probes, key=lambda p: p[5] - p[1])
    offset = wall - (t0 + t1) // 2
    shift = (m0 + m1) // 2 - mono
    rtt = max(m1 - m0, t1 - t0)  # the wall clock may be slewed a little while the probe runs
    return ClockEstimate(offset_ns=offset, measured_shift_ns=shift, uncertainty_ns=(rtt + 1) // 2, rtt_ns=rtt,
                         same_host=same_host, shift_ns=0 if same_host else shift, probes=len(probes))


def check_clock(estimate: ClockEstimate, where: str, max_offset_s: float = MAX_CLOCK_OFFSET_S,
                max_uncertainty_s: float = MAX_CLOCK_UNCERTAINTY_S) -> None:
    """Raise ``ClockOffsetError`` naming ``where`` when the estimate is outside the bounds."""
    uncertainty_s = estimate.uncertainty_ns / 1e9
    if uncertainty_s > max_uncertainty_s:
        raise ClockOffsetError(
            f"{where}: clock offset unknown to within {uncertainty_s * 1e3:.1f} ms (best round trip "
            f"{estimate.rtt_ns / 1e6:.1f} ms over {estimate.probes} probes), above the bound of "
            f"{max_uncertainty_s * 1e3:g} ms; the driver cannot line up this worker's records")
    worst_s = abs(estimate.offset_ns) / 1e9 + uncertainty_s
    if worst_s > max_offset_s:
        raise ClockOffsetError(
            f"{where}: wall clock {estimate.offset_ns / 1e6:+.1f} ms (+-{uncertainty_s * 1e3:.1f} ms) from the "
            f"driver's, beyond the bound of {max_offset_s * 1e3:g} ms; synchronise the hosts' clocks "
            f"(NTP/chrony) and rerun the same command (finished records are kept)")
