package accum

import "testing"

// BenchmarkExitLineIn looks at the first and last lines of outputs as the
// recordings end them, none an exit line.
//
//	go test ./internal/accum -run '^$' -bench BenchmarkExitLineIn
func BenchmarkExitLineIn(b *testing.B) {
	texts := [][]byte{
		[]byte("ls: cannot access '/nonexistent-dir-xyz': No such file or directory\n"),
		[]byte("to-stdout\nmore-stdout\nafter-cancel\n"), []byte("start\nalpha.txt\n"), []byte("tick1\ntick11\n"),
	}
	for b.Loop() {
		for _, t := range texts {
			if ExitLineIn(t, true, nil) {
				b.Fatal()
			}
		}
	}
}
