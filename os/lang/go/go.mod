module clockbench/probe-go

go 1.19
