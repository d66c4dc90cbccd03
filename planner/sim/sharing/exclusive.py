"""``exclusive``: the card runs only this worker, and latency is the curve as measured."""

from __future__ import annotations

from planner.sim.sharing.mode import Choice, Isolation, Sharing, SharingMode


class Exclusive(SharingMode):
    """The card to ourselves: everything the base class says, and always considered."""

    name = "exclusive"
    title = "exclusive"
    isolation = Isolation(memory="whole card", fault="whole card")
    assumption = "The card runs only this worker; latency is the curve as measured or fitted."
    as_measured = True

    def sharing(self, choice: Choice) -> Sharing:
        return Sharing()

    def asked_for(self, choice: Choice) -> bool:
        return True

    def table_key(self, sharing: Sharing) -> tuple[object, ...]:
        return AS_MEASURED


AS_MEASURED: tuple[object, ...] = ("as measured",)
"""The table key of every mode that runs on the curve as measured."""
