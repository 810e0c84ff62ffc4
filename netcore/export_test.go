package netcore

// What the external benchmarks need of the package's insides: the echo
// harness times a bare UDP client by the kernel's receive stamp too, with
// the same code the transport uses (echo_bench_test.go).

var (
	EnableTimestamps = enableTimestamps
	ReadStamped      = readStamped
	KernelStamp      = kernelStamp
)

const OOBSize = oobSize
