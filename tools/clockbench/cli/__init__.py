"""The command line: the parser (main.py), and one module per command that
checks its arguments and drives the layers below (runner.py: `run`, whose
stages are run_args.py, run_plan.py, run_machine.py and run_keep.py;
osvm.py: `os-vm`; commands.py: `report`; storecli.py: `runs`, `import`,
`export`; bench.py: `make bench`, and bench_harness.py its harness
agreement). Nothing below imports this package.

May import: every package."""
