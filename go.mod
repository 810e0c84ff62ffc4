module github.com/lagscope/lagscope

go 1.26.8

require (
	github.com/spf13/pflag v1.1.0 // indirect
	go.uber.org/goleak v1.3.0 // indirect
)
