"""Reading a run: the image's log (serial output or a file) decoded into
records, results and the figures every report shows, and the QR payload of
the summary screen decoded back. Pure: files and text in, data out; no
machine is run and nothing is stored here.

May import: clockbench.errors, clockbench.paths, and this package."""
