module clockbench/harness-go

go 1.19
