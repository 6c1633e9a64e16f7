"""What the test files share, one module a subject, imported as
`helpers.<module>` from every test folder (tests/ is on the path: it is
tests/conftest.py's folder):

- paths: where the sources, the build products and the fixtures are;
- hostlib: the host build of the image's pure code, through ctypes;
- logs: the real fixture logs and variants made from them (a failed run, a
  crashed one, one cut short);
- tool: the host tool run as the tests run it (in this process, or as a
  user does), the arguments of a `run` that keeps nothing of the user's,
  a whole `clockbench run` read back from the folder it kept (made once),
  and what a test does when a tool `make deps` installs is missing;
- boots: a boot of the image with its log parsed, the cache that boots each
  configuration once (the `boot` and `vmm_boot` fixtures), and CliBoot, a
  microVM run through `clockbench run --vmm` read as a boot;
- acpi_builder: ACPI tables as bytes, for the parser's tests and seeds;
- ports: stand-ins for a serial port (a pseudo-terminal, a free TCP port).

Only code lives here; the fixtures are in the conftest.py files."""
