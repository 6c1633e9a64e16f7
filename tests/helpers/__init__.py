"""What the test files share, one module a subject, imported as
`helpers.<module>` from every test folder (tests/ is on the path: it is
tests/conftest.py's folder):

- paths: where the sources, the build products and the fixtures are;
- hostlib: the host build of the image's pure code, through ctypes;
- logs: the real fixture logs and variants made from them (a failed run, a
  crashed one, one cut short), and the host tool run on them;
- acpi_builder: ACPI tables as bytes, for the parser's tests and seeds;
- ptyport: a pseudo-terminal standing in for a serial port.

Only code lives here; the fixtures are in the conftest.py files."""
