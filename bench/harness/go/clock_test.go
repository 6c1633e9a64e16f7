// time.Now under Go's own harness, testing.B (issue 44: the ladder's cost
// against the language's own harness; tools/clockbench/cli/bench_harness.py).
package harness

import (
	"testing"
	"time"
)

// sink keeps the compiler from dropping the call.
var sink time.Time

func BenchmarkTimeNow(b *testing.B) {
	var t time.Time
	for i := 0; i < b.N; i++ {
		t = time.Now()
	}
	sink = t
}
