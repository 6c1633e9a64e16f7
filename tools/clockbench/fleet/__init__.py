"""Many machines: capturing real machines' serial ports (one or several, and
labgrid places), the netboot tree and its shim, and `clockbench fleet`'s
outliers across a store (fleet.py: the bare machines; osfleet.py: the Linux
hosts' clockbench-os runs, said in words; madefleet.py: such a fleet made
from real OS logs, for `make bench` and the tests).

May import: clockbench.errors, clockbench.paths, clockbench.records, clockbench.machines,
clockbench.runs, clockbench.report, clockbench.release, and this package."""
