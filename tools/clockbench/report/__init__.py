"""Showing runs: the terminal report and its live progress, the HTML pages
and their plots, the CI formats, `compare` (bare runs, and bare beside the
OS side), the languages' ladder, and the ACPI preview. Reads records and the store; runs nothing.

May import: clockbench.errors, clockbench.paths, clockbench.records, clockbench.runs,
and this package."""
