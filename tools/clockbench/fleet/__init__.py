"""Many machines: capturing real machines' serial ports (one or several, and
labgrid places), the netboot tree and its shim, and `clockbench fleet`'s
outliers across a store.

May import: clockbench.errors, clockbench.paths, clockbench.records, clockbench.machines,
clockbench.runs, clockbench.report, clockbench.release, and this package."""
